"""Oracle cases of the string operators (onemodel_compile/ops/strings.py): string tensors are
numpy object arrays, drawn by the "words" generator (mixed case, accents, empty words, dots,
hyphens, runs of spaces)."""

from __future__ import annotations

from tests.harness.oracle import Case, c, x

OPERATORS = ("StringConcat", "StringSplit", "RegexFullMatch", "StringNormalizer")


def _words(*shape, **options):
    return x(*shape, dtype="object", gen="words", **options)


CASES = [
    Case("string_concat_same_shape", "StringConcat", 20, (_words(3, 4), _words(3, 4))),
    Case("string_concat_broadcast", "StringConcat", 20, (_words(2, 1, 3), c(["!"], "object"))),
    Case("string_split_dot", "StringSplit", 20, (_words(5),), attrs={"delimiter": "."}, outputs=2),
    Case(
        "string_split_whitespace_maxsplit",
        "StringSplit",
        20,
        (_words(2, 3),),
        attrs={"maxsplit": 1},
        outputs=2,
    ),
    Case(
        "string_split_hyphen", "StringSplit", 20, (_words(7),), attrs={"delimiter": "-"}, outputs=2
    ),
    Case(
        "regex_full_match_words",
        "RegexFullMatch",
        20,
        (_words(4, 3),),
        attrs={"pattern": r"[A-Za-z]+(\s+\w+)*"},
    ),
    Case(
        "regex_full_match_digits", "RegexFullMatch", 20, (_words(9),), attrs={"pattern": r".*\d.*"}
    ),
    Case(
        "string_normalizer_lower_stopwords",
        "StringNormalizer",
        10,
        (_words(8),),
        attrs={
            "case_change_action": "LOWER",
            "stopwords": ["ok", "42"],
            "is_case_sensitive": 1,
            "locale": "C.UTF-8",  # onnxruntime builds the locale (en_US is not installed here)
        },
    ),
    Case(
        "string_normalizer_upper_insensitive",
        "StringNormalizer",
        10,
        (_words(1, 6),),
        attrs={"case_change_action": "UPPER", "stopwords": ["MONDAY"], "locale": "C.UTF-8"},
    ),
]
