"""The library's own exp and log, and the functions built on them: the same bits on every machine.

numpy's exp, log, tanh, ... give different bits at different SIMD levels and in different numpy
versions (docs/contract.md, "Exactness"). These kernels use nothing but
- IEEE-754 float64 `+ - * /`, each a separate numpy call and so one correctly rounded operation
  (numpy never fuses them into multiply-adds), in the order written here;
- IEEE-754 float64 `sqrt` (correctly rounded too), for the inverse hyperbolic functions;
- exact operations: comparisons, abs, negation, min/max, floor, copysign, multiplication by a
  power of two, conversions that are exact, and the one final conversion to the result type,
  which IEEE rounds correctly;
- integer arithmetic on the float64 bit patterns (unsigned, so wrap-around is defined) and lookups
  in tables of constants.
Every constant is a literal derived by tools/derive_exact_coefficients.py with mpmath (rerun it
with --check to verify them) or a correctly rounded Python division; nothing here calls libm.

float16, bfloat16 and float32 inputs are widened to float64 (exactly), evaluated with polynomials
accurate far below their ulp, and rounded once to the input's type: the result is the correctly
rounded value but for rare near-halfway inputs, and never more than 1 ulp off. float64 inputs use
longer polynomials and stay within an ulp or a few (the measured figures are in
docs/exact-transcendentals.md). Every function maps an ndarray of float16, bfloat16, float32 or
float64 to an ndarray of the same dtype and shape (exact_pow: the dtype of the base); bfloat16
results are rounded once too, by way of a round-to-odd float32.

Arrays are processed in blocks of 8192 elements so that the twenty-odd passes of a function stay in
the cache; each element's result depends on that element only, never on the blocking.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

__all__ = [
    "exact_acosh",
    "exact_asinh",
    "exact_atanh",
    "exact_cosh",
    "exact_erf",
    "exact_exp",
    "exact_expm1",
    "exact_log",
    "exact_log1p",
    "exact_pow",
    "exact_sigmoid",
    "exact_sinh",
    "exact_softplus",
    "exact_tanh",
]

_BLOCK = 8192
_FLOAT_TYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _hex(*values: str) -> np.ndarray:
    return np.array([float.fromhex(v) for v in values], dtype=np.float64)


# --- constants: the output of `python -m tools.derive_exact_coefficients` -------------------------
# CONSTANTS-BEGIN
_EXP_TABLE_BITS = (
    0x3FF0000000000000,
    0x3FEFF63DA9FB3335,
    0x3FEFEC9A3E778061,
    0x3FEFE315E86E7F85,
    0x3FEFD9B0D3158574,
    0x3FEFD06B29DDF6DE,
    0x3FEFC74518759BC8,
    0x3FEFBE3ECAC6F383,
    0x3FEFB5586CF9890F,
    0x3FEFAC922B7247F7,
    0x3FEFA3EC32D3D1A2,
    0x3FEF9B66AFFED31B,
    0x3FEF9301D0125B51,
    0x3FEF8ABDC06C31CC,
    0x3FEF829AAEA92DE0,
    0x3FEF7A98C8A58E51,
    0x3FEF72B83C7D517B,
    0x3FEF6AF9388C8DEA,
    0x3FEF635BEB6FCB75,
    0x3FEF5BE084045CD4,
    0x3FEF54873168B9AA,
    0x3FEF4D5022FCD91D,
    0x3FEF463B88628CD6,
    0x3FEF3F49917DDC96,
    0x3FEF387A6E756238,
    0x3FEF31CE4FB2A63F,
    0x3FEF2B4565E27CDD,
    0x3FEF24DFE1F56381,
    0x3FEF1E9DF51FDEE1,
    0x3FEF187FD0DAD990,
    0x3FEF1285A6E4030B,
    0x3FEF0CAFA93E2F56,
    0x3FEF06FE0A31B715,
    0x3FEF0170FC4CD831,
    0x3FEEFC08B26416FF,
    0x3FEEF6C55F929FF1,
    0x3FEEF1A7373AA9CB,
    0x3FEEECAE6D05D866,
    0x3FEEE7DB34E59FF7,
    0x3FEEE32DC313A8E5,
    0x3FEEDEA64C123422,
    0x3FEEDA4504AC801C,
    0x3FEED60A21F72E2A,
    0x3FEED1F5D950A897,
    0x3FEECE086061892D,
    0x3FEECA41ED1D0057,
    0x3FEEC6A2B5C13CD0,
    0x3FEEC32AF0D7D3DE,
    0x3FEEBFDAD5362A27,
    0x3FEEBCB299FDDD0D,
    0x3FEEB9B2769D2CA7,
    0x3FEEB6DAA2CF6642,
    0x3FEEB42B569D4F82,
    0x3FEEB1A4CA5D920F,
    0x3FEEAF4736B527DA,
    0x3FEEAD12D497C7FD,
    0x3FEEAB07DD485429,
    0x3FEEA9268A5946B7,
    0x3FEEA76F15AD2148,
    0x3FEEA5E1B976DC09,
    0x3FEEA47EB03A5585,
    0x3FEEA34634CCC320,
    0x3FEEA23882552225,
    0x3FEEA155D44CA973,
    0x3FEEA09E667F3BCD,
    0x3FEEA012750BDABF,
    0x3FEE9FB23C651A2F,
    0x3FEE9F7DF9519484,
    0x3FEE9F75E8EC5F74,
    0x3FEE9F9A48A58174,
    0x3FEE9FEB564267C9,
    0x3FEEA0694FDE5D3F,
    0x3FEEA11473EB0187,
    0x3FEEA1ED0130C132,
    0x3FEEA2F336CF4E62,
    0x3FEEA427543E1A12,
    0x3FEEA589994CCE13,
    0x3FEEA71A4623C7AD,
    0x3FEEA8D99B4492ED,
    0x3FEEAAC7D98A6699,
    0x3FEEACE5422AA0DB,
    0x3FEEAF3216B5448C,
    0x3FEEB1AE99157736,
    0x3FEEB45B0B91FFC6,
    0x3FEEB737B0CDC5E5,
    0x3FEEBA44CBC8520F,
    0x3FEEBD829FDE4E50,
    0x3FEEC0F170CA07BA,
    0x3FEEC49182A3F090,
    0x3FEEC86319E32323,
    0x3FEECC667B5DE565,
    0x3FEED09BEC4A2D33,
    0x3FEED503B23E255D,
    0x3FEED99E1330B358,
    0x3FEEDE6B5579FDBF,
    0x3FEEE36BBFD3F37A,
    0x3FEEE89F995AD3AD,
    0x3FEEEE07298DB666,
    0x3FEEF3A2B84F15FB,
    0x3FEEF9728DE5593A,
    0x3FEEFF76F2FB5E47,
    0x3FEF05B030A1064A,
    0x3FEF0C1E904BC1D2,
    0x3FEF12C25BD71E09,
    0x3FEF199BDD85529C,
    0x3FEF20AB5FFFD07A,
    0x3FEF27F12E57D14B,
    0x3FEF2F6D9406E7B5,
    0x3FEF3720DCEF9069,
    0x3FEF3F0B555DC3FA,
    0x3FEF472D4A07897C,
    0x3FEF4F87080D89F2,
    0x3FEF5818DCFBA487,
    0x3FEF60E316C98398,
    0x3FEF69E603DB3285,
    0x3FEF7321F301B460,
    0x3FEF7C97337B9B5F,
    0x3FEF864614F5A129,
    0x3FEF902EE78B3FF6,
    0x3FEF9A51FBC74C83,
    0x3FEFA4AFA2A490DA,
    0x3FEFAF482D8E67F1,
    0x3FEFBA1BEE615A27,
    0x3FEFC52B376BBA97,
    0x3FEFD0765B6E4540,
    0x3FEFDBFDAD9CBE14,
    0x3FEFE7C1819E90D8,
    0x3FEFF3C22B8F71F1,
)
_EXP_TABLE_TAIL = _hex(
    "0x0.0p+0",
    "0x1.b3b4f1a88bf6ep-54",
    "-0x1.160139cd8dc5dp-56",
    "-0x1.05e7a108766d1p-54",
    "0x1.cd2523567f613p-55",
    "-0x1.bce8023f98efap-55",
    "0x1.0f74e61e6c861p-57",
    "0x1.0a3e45b33d399p-54",
    "0x1.79aa65d837b6dp-54",
    "0x1.eb51a92fdeffcp-55",
    "0x1.ebe3d702f9cd1p-60",
    "-0x1.a033489906e0bp-57",
    "-0x1.556522a2fbd0ep-54",
    "-0x1.080ef8c4eea55p-58",
    "-0x1.1c923b9d5f416p-54",
    "0x1.0d3e3e95c55afp-55",
    "-0x1.01b15eaa59348p-55",
    "-0x1.f1ff055de323dp-55",
    "0x1.b898c3f1353bfp-55",
    "-0x1.6d99c7611eb26p-54",
    "0x1.aecf73e3a2f60p-54",
    "-0x1.fe782cb86389dp-55",
    "0x1.a6f4144a6c38dp-55",
    "0x1.07a05b0e4047dp-55",
    "0x1.68efde3a8a894p-54",
    "0x1.75e18f274487dp-55",
    "0x1.0472b981fe7f2p-55",
    "-0x1.6b87b3f71085ep-54",
    "0x1.2f7e16d09ab31p-55",
    "-0x1.d219b1a6fbffap-60",
    "0x1.b3782720c0ab4p-55",
    "0x1.e149289cecb8fp-57",
    "0x1.34d754db0abb6p-55",
    "0x1.64201e2ac744cp-55",
    "0x1.fdd395dd3f84ap-55",
    "-0x1.6a3803b8e5b04p-55",
    "-0x1.24aedcc4b5068p-54",
    "-0x1.907f81b512d8ep-54",
    "-0x1.1d1e83e9436d2p-56",
    "-0x1.91919b3ce1b15p-54",
    "0x1.59f48a72a4c6dp-55",
    "-0x1.312607a28698ap-54",
    "-0x1.8a78f4817895bp-58",
    "-0x1.c2c9b67499a1bp-56",
    "0x1.363ed60c2ac11p-59",
    "0x1.666093b0664efp-54",
    "0x1.ecce1daa10379p-57",
    "0x1.3ff8e3f0f1230p-54",
    "0x1.690cebb7aafb0p-56",
    "0x1.31dbdeb54e077p-54",
    "-0x1.f94340071a38ep-55",
    "-0x1.7deccdc93a349p-55",
    "-0x1.8dec6bd0f385fp-56",
    "-0x1.61246ec7b5cf6p-55",
    "0x1.3350518fdd78ep-54",
    "0x1.b98b72f8a9b05p-56",
    "0x1.063e1e21c5409p-54",
    "0x1.4c7855019c6eap-60",
    "0x1.432e62b64c035p-54",
    "-0x1.ce44a6199769fp-55",
    "-0x1.c33c53bef4da8p-55",
    "-0x1.45378892be9aep-55",
    "-0x1.3cedd78565858p-54",
    "0x1.710aa807e1964p-58",
    "-0x1.3b3efbf5e2228p-54",
    "-0x1.a12ad8734b982p-57",
    "-0x1.367efb86da9eep-57",
    "-0x1.0dc3d54e08851p-55",
    "-0x1.81f647e5a3ecfp-56",
    "-0x1.6ee4ac08b7db0p-55",
    "-0x1.619321e55e68ap-55",
    "0x1.09ccb5e09d4d3p-54",
    "-0x1.b32dcb94da51dp-56",
    "0x1.4ecfd5467c06bp-54",
    "0x1.5ebe1abd66c55p-57",
    "-0x1.8a1c52fb3cf42p-55",
    "-0x1.369b6f13b3734p-54",
    "-0x1.05e843a19ff1ep-55",
    "-0x1.4d450d872576ep-54",
    "0x1.0ad675b0e8a00p-54",
    "0x1.db72fc1f0eab4p-55",
    "-0x1.5b6609cc5e7ffp-57",
    "0x1.bf68359f35f44p-56",
    "-0x1.3091fa71e3d83p-54",
    "-0x1.da9b88b6c1e29p-58",
    "-0x1.c23f97c90b959p-57",
    "-0x1.2434322f4f9aap-54",
    "-0x1.5ca6cd7668e4bp-55",
    "0x1.1affc2b91ce27p-56",
    "0x1.dd235e10a73bbp-57",
    "-0x1.7c50422622263p-55",
    "0x1.b1c86e3e231d5p-55",
    "-0x1.1bbd1d3bcbb15p-54",
    "0x1.0cc319cee31d2p-54",
    "0x1.469846e735ab3p-55",
    "-0x1.2dfcd978e9db4p-55",
    "0x1.c1a7792cb3387p-55",
    "-0x1.07b8f4ad1d9fap-54",
    "-0x1.5c3d956dcaebap-58",
    "-0x1.0a40e3da6f640p-54",
    "-0x1.8d6f438ad9334p-57",
    "-0x1.1eee26b588a35p-54",
    "0x1.4ffd70a5fddcdp-56",
    "-0x1.1bdfbfa9298acp-54",
    "0x1.36eae30af0cb3p-56",
    "0x1.ee3325c9ffd94p-55",
    "0x1.4e08fd10959acp-55",
    "0x1.3cdaf384e1a67p-57",
    "0x1.76b2c6c921968p-57",
    "-0x1.08a1883ccb5d2p-55",
    "-0x1.fad5d3ffffa6fp-55",
    "-0x1.00dae3875a949p-54",
    "0x1.4a385a63d07a7p-56",
    "-0x1.2919e2040220fp-55",
    "0x1.e5a50d5c192acp-55",
    "0x1.43a59ac016b4bp-55",
    "-0x1.2d52107b43e1fp-55",
    "-0x1.92ab93b470dc9p-55",
    "0x1.4b604603a88d3p-56",
    "0x1.3c5ec519d7271p-55",
    "-0x1.ff7128fd391f0p-55",
    "-0x1.dae98e223747dp-55",
    "0x1.ec3bc41aa2008p-55",
    "0x1.42b94c3a9eb32p-55",
    "0x1.a64a931d185eep-55",
    "-0x1.e37bae43be3edp-55",
    "0x1.7893b4d91cd9dp-56",
    "0x1.305c14160cc89p-58",
)
_EXP_INV_LN2_N = float.fromhex("0x1.71547652b82fep+7")
_EXP_LN2_N_HI = float.fromhex("0x1.62e42fefc0000p-8")
_EXP_LN2_N_LO = float.fromhex("-0x1.c610ca86c3899p-44")
_EXP_POLY_64 = _hex(
    "0x1.fffffffffff58p-2",
    "0x1.5555555555495p-3",
    "0x1.55555accc21e1p-5",
    "0x1.111115c02757bp-7",
)
_EXP_POLY_32 = _hex(
    "0x1.ffffffffffeb1p-2",
    "0x1.55555b7baf902p-3",
    "0x1.55555c29c4424p-5",
)
_LOG_LN2_HI = float.fromhex("0x1.62e42fefa3800p-1")
_LOG_LN2_LO = float.fromhex("0x1.ef35793c76730p-45")
_LOG_POLY_64 = _hex(
    "0x1.5555555555558p-1",
    "0x1.999999999522ep-2",
    "0x1.2492492e02b3ap-2",
    "0x1.c71c62d1c3e10p-3",
    "0x1.7462b9b8cc840p-3",
    "0x1.39fdc7bd6f931p-3",
    "0x1.2b5f0bf712a63p-3",
)
_LOG_POLY_32 = _hex(
    "0x1.55555555553b3p-1",
    "0x1.9999999b8b07fp-2",
    "0x1.249246261eb7bp-2",
    "0x1.c71fd074a6ea0p-3",
    "0x1.73824fde70f53p-3",
    "0x1.5471a20bf8d5ap-3",
)
_ERF_CENTRES = _hex(
    "0x0.0p+0",
    "0x1.8000000000000p-2",
    "0x1.4000000000000p-1",
    "0x1.c000000000000p-1",
    "0x1.2000000000000p+0",
    "0x1.6000000000000p+0",
    "0x1.a000000000000p+0",
    "0x1.e000000000000p+0",
    "0x1.1000000000000p+1",
    "0x1.3000000000000p+1",
    "0x1.5000000000000p+1",
    "0x1.7000000000000p+1",
    "0x1.9000000000000p+1",
    "0x1.b000000000000p+1",
    "0x1.d000000000000p+1",
    "0x1.f000000000000p+1",
    "0x1.0800000000000p+2",
    "0x1.1800000000000p+2",
    "0x1.2800000000000p+2",
    "0x1.3800000000000p+2",
    "0x1.4800000000000p+2",
    "0x1.5800000000000p+2",
    "0x1.6800000000000p+2",
    "0x1.7800000000000p+2",
    "0x1.8000000000000p+2",
)
_ERF_COEFFS = (
    _hex(
        "0x0.0p+0",
        "0x1.9dd0d2b721f39p-2",
        "0x1.3f196dcd0f135p-1",
        "0x1.91724951b8fc6p-1",
        "0x1.c6dad2829ec62p-1",
        "0x1.e5768c3b4a3fcp-1",
        "0x1.f4f693b67bd77p-1",
        "0x1.fbe61eef4cf6ap-1",
        "0x1.fea4218d6594ap-1",
        "0x1.ff9960f3eb327p-1",
        "0x1.ffe514bbdc197p-1",
        "0x1.fff9ba420e834p-1",
        "0x1.fffeb3ebb267bp-1",
        "0x1.ffffc316d9ed0p-1",
        "0x1.fffff618c3da6p-1",
        "0x1.fffffe92ced93p-1",
        "0x1.ffffffd169d0cp-1",
        "0x1.fffffffabd229p-1",
        "0x1.ffffffff79626p-1",
        "0x1.fffffffff4188p-1",
        "0x1.ffffffffff11ap-1",
        "0x1.ffffffffffef8p-1",
        "0x1.ffffffffffff0p-1",
        "0x1.fffffffffffffp-1",
        "0x1.0000000000000p+0",
    ),
    _hex(
        "0x1.20dd750429b6dp+0",
        "0x1.f5f0cdaf15313p-1",
        "0x1.86e9694134b9ep-1",
        "0x1.0cab61f084b93p-1",
        "0x1.45e99bcbb7915p-2",
        "0x1.5ce595c455b0ap-3",
        "0x1.499d478bca735p-4",
        "0x1.12ceb37ff9bc4p-5",
        "0x1.94624e78e0fafp-7",
        "0x1.06918b6355624p-8",
        "0x1.2ce898809244dp-10",
        "0x1.30538fbb77ecbp-12",
        "0x1.0f9e1b4dd36e2p-14",
        "0x1.abe09e9144b75p-17",
        "0x1.296a70f414073p-19",
        "0x1.6ce1aa3fd7be4p-22",
        "0x1.8b0cfce0578d3p-25",
        "0x1.7974e743de589p-28",
        "0x1.3e44e45300ef6p-31",
        "0x1.d9a880f303a2dp-35",
        "0x1.370ab83276280p-38",
        "0x1.68823e528af94p-42",
        "0x1.70beaf9c66de4p-46",
        "0x1.4cd9c0412d067p-50",
        "0x0.0p+0",
    ),
    _hex(
        "-0x1.4b1ec58702323p-46",
        "-0x1.78749a434fda0p-2",
        "-0x1.e8a3c39181e6dp-2",
        "-0x1.d62beb64e84b2p-2",
        "-0x1.6ea6cf452e88bp-2",
        "-0x1.dfbbadedf5d0dp-3",
        "-0x1.0bcfca2194774p-3",
        "-0x1.01a1c847fa1b2p-4",
        "-0x1.ada873606f135p-6",
        "-0x1.37ccd585f57d2p-7",
        "-0x1.8af14828c01a2p-9",
        "-0x1.b5781e9d7c3ecp-11",
        "-0x1.a8670aa9998e8p-13",
        "-0x1.690585ca90b68p-15",
        "-0x1.0d88765d31c48p-17",
        "-0x1.617a9cedde099p-20",
        "-0x1.976564c774c05p-23",
        "-0x1.9cd7dcf28a72dp-26",
        "-0x1.6fffa800a5a74p-29",
        "-0x1.20a2ae953c943p-32",
        "-0x1.8e85bc03d627cp-36",
        "-0x1.e46f03c635556p-40",
        "-0x1.03461380f8cfap-43",
        "-0x1.e8dfd2767a307p-48",
        "0x0.0p+0",
    ),
    _hex(
        "-0x1.812746b02adf9p-2",
        "-0x1.e106c51d1f03cp-3",
        "-0x1.c810502168a30p-5",
        "0x1.7c9d756a114a6p-4",
        "0x1.4cb3cf0aa0c86p-3",
        "0x1.4374d82e04d2cp-3",
        "0x1.d6631e1a28e77p-4",
        "0x1.143d1c6f4efcdp-4",
        "0x1.0ea475da3bdddp-5",
        "0x1.c1ec102e365dep-7",
        "0x1.407fbd18f147bp-8",
        "0x1.89e17c074d64dp-10",
        "0x1.a3737e2a2eed7p-12",
        "0x1.84522fe880421p-14",
        "0x1.394b1fa66f978p-16",
        "0x1.b95fa39b39a1fp-19",
        "0x1.0fdac559bd593p-21",
        "0x1.252af6f4a8b24p-24",
        "0x1.1508f769380d0p-27",
        "0x1.cb2a2e576fc39p-31",
        "0x1.4decacc15a687p-34",
        "0x1.aa76121349896p-38",
        "0x1.de74c0e5c5d5cp-42",
        "0x1.d7c14a0d40463p-46",
        "0x0.0p+0",
    ),
    _hex(
        "-0x1.875abeea4b7a2p-33",
        "0x1.5529abccc0e88p-3",
        "0x1.6963c8a394b8cp-3",
        "0x1.cc60567dcb226p-4",
        "0x1.ca5083176cb45p-6",
        "-0x1.f3b8d52d658a0p-6",
        "-0x1.974c0368b2622p-5",
        "-0x1.5a316520d7270p-5",
        "-0x1.afe553fa2b8fdp-6",
        "-0x1.ae59615f476a0p-7",
        "-0x1.62d4c6d46e43cp-8",
        "-0x1.ed4ac7db21515p-10",
        "-0x1.24544f0368604p-11",
        "-0x1.298f8d46e1d1fp-13",
        "-0x1.05760ad2032bbp-15",
        "-0x1.8e1fc4118bf5bp-18",
        "-0x1.07600c9d41374p-20",
        "-0x1.2f7354c9f0773p-23",
        "-0x1.30fd0c2814960p-26",
        "-0x1.0bc6ec8bcdf6dp-29",
        "-0x1.9b3c545961f91p-33",
        "-0x1.146fad677aa27p-36",
        "-0x1.459c7eef30a1dp-40",
        "-0x1.504299da7faa7p-44",
        "0x0.0p+0",
    ),
    _hex(
        "0x1.ce2f23207b564p-4",
        "0x1.7488b8a838467p-5",
        "-0x1.c1242dfe5c33cp-6",
        "-0x1.1350f4b203e6ep-4",
        "-0x1.f65d15f237923p-5",
        "-0x1.f572c4c97763dp-6",
        "-0x1.17d430bccc4d3p-9",
        "0x1.779b1e57b3a9ap-7",
        "0x1.9973b48a42100p-7",
        "0x1.11dae473369cfp-7",
        "0x1.146c4b3de2785p-8",
        "0x1.c11f27060baa9p-10",
        "0x1.2e7e763d6ac57p-11",
        "0x1.5775778959632p-13",
        "0x1.4c1fe48baf153p-15",
        "0x1.13717218274a9p-17",
        "0x1.89ca77403994cp-20",
        "0x1.e7102f6f4b943p-23",
        "0x1.05563261dd4abp-25",
        "0x1.e7ba56e0e0c7ep-29",
        "0x1.8c78e378e3523p-32",
        "0x1.192d3a21940bdp-35",
        "0x1.5c5ee1e54ccf6p-39",
        "0x1.796a36553e062p-43",
        "0x0.0p+0",
    ),
    _hex(
        "-0x1.b652574f3a7f8p-24",
        "-0x1.9a7944be7ca87p-5",
        "-0x1.52b2666954402p-5",
        "-0x1.53bb4d1a4601fp-7",
        "0x1.fd1c6a0c47a3bp-7",
        "0x1.6b16f55fd8067p-6",
        "0x1.d857f405d0a10p-7",
        "0x1.0d099d841c37ep-8",
        "-0x1.dd78efc72b1c3p-10",
        "-0x1.982b287bb9e20p-9",
        "-0x1.267f3c26803c8p-9",
        "-0x1.2add1caca331bp-10",
        "-0x1.da496d13d8e12p-12",
        "-0x1.330aaa7ca9eccp-13",
        "-0x1.4b981fe8b2b9cp-15",
        "-0x1.2eb292a7876e0p-17",
        "-0x1.d73aaf289ec20p-20",
        "-0x1.3ab0c04855fafp-22",
        "-0x1.6a3abea5084e6p-25",
        "-0x1.6893803ac3448p-28",
        "-0x1.373d256649291p-31",
        "-0x1.d2eb620225994p-35",
        "-0x1.30e48846f3284p-38",
        "-0x1.5b2398d4daa48p-42",
        "0x0.0p+0",
    ),
    _hex(
        "-0x1.b8280c8b6021ep-6",
        "-0x1.65c10d37b130ap-8",
        "0x1.c7cd9997edaa8p-7",
        "0x1.30ac213470726p-6",
        "0x1.3acc79838c4b7p-7",
        "-0x1.73ffa139a8fafp-10",
        "-0x1.954ab12b866abp-8",
        "-0x1.42fcbbb76cee0p-8",
        "-0x1.ea03bce11ca62p-10",
        "0x1.0283e5cabcbdap-13",
        "0x1.64f893632beabp-11",
        "0x1.151f78d1ba279p-11",
        "0x1.176cf60e97541p-12",
        "0x1.ac99965b146a8p-14",
        "0x1.085c0e7b08846p-15",
        "0x1.0d8c35adc3205p-17",
        "0x1.cd9e11efdede3p-20",
        "0x1.4f611212c7706p-22",
        "0x1.a06fe42c5cd29p-25",
        "0x1.bc2af76a58a7fp-28",
        "0x1.988b01b3ecfa7p-31",
        "0x1.450daf7820910p-34",
        "0x1.c0884b19ec9c8p-38",
        "0x1.0ce203ac221f3p-41",
        "0x0.0p+0",
    ),
    _hex(
        "-0x1.15a5e7cb60bf1p-17",
        "0x1.7098ab0052334p-7",
        "0x1.b62ebaa7c3674p-8",
        "-0x1.e3ea366dfc5f2p-10",
        "-0x1.8b41d0d953e21p-8",
        "-0x1.1740aaed9f392p-8",
        "-0x1.2e4d9d766585cp-11",
        "0x1.76fd58dd87cd5p-10",
        "0x1.6aa392506aa22p-10",
        "0x1.377e9028629fbp-11",
        "0x1.22aad19becef4p-15",
        "-0x1.1c64e29ee835cp-13",
        "-0x1.d2aed4eb5664ep-14",
        "-0x1.cc175cf61ee5ap-15",
        "-0x1.510a83f42d339p-16",
        "-0x1.888385bae2034p-18",
        "-0x1.770bc30e50ddcp-20",
        "-0x1.2b5bbacfef522p-22",
        "-0x1.93d2573ea69c6p-25",
        "-0x1.cff4a072018c6p-28",
        "-0x1.c89a4b2a33f06p-31",
        "-0x1.8297c817be630p-34",
        "-0x1.1a8b203d27dd9p-37",
        "-0x1.6576511f42d8fp-41",
        "0x0.0p+0",
    ),
    _hex(
        "0x1.58cd3d852ab73p-8",
        "0x1.0437736c66828p-13",
        "-0x1.dc3770291de0bp-9",
        "-0x1.aae10d0f3896cp-9",
        "-0x1.79bf96252304dp-12",
        "0x1.9da098d786160p-10",
        "0x1.71cdcad786cd8p-10",
        "0x1.7be0ea9ab8be2p-12",
        "-0x1.2fd88bf280b9ep-12",
        "-0x1.61ed67caaccd7p-12",
        "-0x1.400950126fb43p-13",
        "-0x1.0ecaa864254c3p-16",
        "0x1.aaffc60c65ebbp-16",
        "0x1.64c77b81c4bd6p-16",
        "0x1.5166e4af1dec0p-17",
        "0x1.d25c71efacbcap-19",
        "0x1.fc16bb709bb8dp-21",
        "0x1.c3b001cc11657p-23",
        "0x1.4e173670d6355p-25",
        "0x1.a04ab80487925p-28",
        "0x1.b8a177e6092b6p-31",
        "0x1.8e9cb080d9b75p-34",
        "0x1.359eb6fae35f2p-37",
        "0x1.9e7a4d58069bdp-41",
        "0x0.0p+0",
    ),
    _hex(
        "-0x1.9f661fff3d238p-14",
        "-0x1.0584f7b97cef1p-9",
        "-0x1.80148fb4ff523p-11",
        "0x1.d22bbc38c19d6p-11",
        "0x1.2c962f6265627p-10",
        "0x1.54b393eb9545bp-12",
        "-0x1.70f6841dc98dfp-12",
        "-0x1.9755f4cd62596p-12",
        "-0x1.02ee5db052492p-13",
        "0x1.c2bf527746a66p-15",
        "0x1.34e040a703580p-14",
        "0x1.18df325bd4bdfp-15",
        "0x1.0c83f51a28198p-18",
        "-0x1.3193eeacd7760p-18",
        "-0x1.f29b3f8dc935bp-19",
        "-0x1.bd6ad6fc48265p-20",
        "-0x1.2006e7cfefd59p-21",
        "-0x1.24162b792c3f2p-23",
        "-0x1.e1aac6d993937p-26",
        "-0x1.4986bfb66287cp-28",
        "-0x1.7af1c8445a7fbp-31",
        "-0x1.717b834c483aep-34",
        "-0x1.3368626677223p-37",
        "-0x1.b697bc174bb86p-41",
        "0x0.0p+0",
    ),
    _hex(
        "-0x1.7e3b549bd4ce5p-11",
        "0x1.e1c300d576affp-14",
        "0x1.60a2f201031b1p-11",
        "0x1.975601d3caf97p-12",
        "-0x1.6d75bcca740c9p-13",
        "-0x1.612fe183d8093p-12",
        "-0x1.0803be589eba5p-13",
        "0x1.307e12298c370p-14",
        "0x1.8be5a72d7937bp-14",
        "0x1.0a94d2b2121dcp-15",
        "-0x1.52e1b544e287cp-17",
        "-0x1.eed18db856b00p-17",
        "-0x1.acb00bcd1fa93p-18",
        "-0x1.6d171fc41676cp-21",
        "0x1.abd8d2e599d82p-21",
        "0x1.3fe1c32748fb0p-21",
        "0x1.07ae5dc19c594p-22",
        "0x1.3a5de47e67c99p-24",
        "0x1.255c325aa8172p-26",
        "0x1.bc5ab29237e3dp-29",
        "0x1.16c10073e9201p-31",
        "0x1.25795018d9722p-34",
        "0x1.0597459057056p-37",
        "0x1.8d673dd030a0ep-41",
        "0x0.0p+0",
    ),
)
_ERFC_TABLE = (
    _hex(
        "0x1.4000000000000p-1",
        "0x1.c000000000000p-1",
        "0x1.2000000000000p+0",
        "0x1.6000000000000p+0",
        "0x1.a000000000000p+0",
        "0x1.e000000000000p+0",
        "0x1.1000000000000p+1",
        "0x1.3000000000000p+1",
        "0x1.5000000000000p+1",
        "0x1.7000000000000p+1",
        "0x1.9000000000000p+1",
        "0x1.b000000000000p+1",
        "0x1.d000000000000p+1",
        "0x1.f000000000000p+1",
        "0x1.1000000000000p+2",
        "0x1.3000000000000p+2",
        "0x1.5000000000000p+2",
        "0x1.7000000000000p+2",
        "0x1.9000000000000p+2",
        "0x1.b000000000000p+2",
        "0x1.d000000000000p+2",
        "0x1.f000000000000p+2",
        "0x1.1000000000000p+3",
        "0x1.3000000000000p+3",
        "0x1.5000000000000p+3",
        "0x1.7000000000000p+3",
        "0x1.9000000000000p+3",
        "0x1.b000000000000p+3",
        "0x1.d000000000000p+3",
        "0x1.f000000000000p+3",
        "0x1.0800000000000p+4",
        "0x1.1800000000000p+4",
        "0x1.2800000000000p+4",
        "0x1.3800000000000p+4",
        "0x1.4800000000000p+4",
        "0x1.5800000000000p+4",
        "0x1.6800000000000p+4",
        "0x1.7800000000000p+4",
        "0x1.8800000000000p+4",
        "0x1.9800000000000p+4",
        "0x1.a800000000000p+4",
        "0x1.b800000000000p+4",
    ),
    _hex(
        "0x1.1d16b5809eaf6p-1",
        "0x1.db747ee409ac5p-2",
        "0x1.9531e09b149b5p-2",
        "0x1.5f88f52f3c76bp-2",
        "0x1.3583f6644327bp-2",
        "0x1.13e5743b60480p-2",
        "0x1.f0fd28fdc20abp-3",
        "0x1.c3987d04d0b98p-3",
        "0x1.9d7738e1f4db7p-3",
        "0x1.7d0a5e9dd5710p-3",
        "0x1.612a8125451bdp-3",
        "0x1.48f8f10299b71p-3",
        "0x1.33cb19179d7f6p-3",
        "0x1.211c625924e34p-3",
        "0x1.08e62ce8c89adp-3",
        "0x1.dc603a3e77e9bp-4",
        "0x1.b096face146fep-4",
        "0x1.8c14049cd551ep-4",
        "0x1.6d2f811bf7397p-4",
        "0x1.52b80d463c470p-4",
        "0x1.3bcc59a28358cp-4",
        "0x1.27c2b4d2f8988p-4",
        "0x1.0e078051f491dp-4",
        "0x1.e3db9bbbefc9ep-5",
        "0x1.b634a500659c3p-5",
        "0x1.90658c4eb57cbp-5",
        "0x1.7093453935bbap-5",
        "0x1.556d4dd1f605cp-5",
        "0x1.3dfeb746148ecp-5",
        "0x1.29910a1ff7b0ep-5",
        "0x1.17999659ab8b6p-5",
        "0x1.07ad15536656dp-5",
        "0x1.f2ee84766fae7p-6",
        "0x1.d96a02b92c7d2p-6",
        "0x1.c260728555995p-6",
        "0x1.ad79a3c2ddabfp-6",
        "0x1.9a6cfe4b0d001p-6",
        "0x1.88fe35af1512bp-6",
        "0x1.78faca60fd196p-6",
        "0x1.6a382043f7ebdp-6",
        "0x1.5c92036f02bcep-6",
        "0x1.4fe97f404ff9ap-6",
    ),
    _hex(
        "-0x1.babd0e4f1a24dp-2",
        "-0x1.4369f60195edcp-2",
        "-0x1.e78b356770fbbp-3",
        "-0x1.797a639d8129dp-3",
        "-0x1.2b11e6959934cp-3",
        "-0x1.e36580c7f734ap-4",
        "-0x1.8d6f73d5aa121p-4",
        "-0x1.4baeac94dc8b2p-4",
        "-0x1.18737afe106cep-4",
        "-0x1.dfc0205709b2cp-5",
        "-0x1.9e8803e177224p-5",
        "-0x1.696d353f008b5p-5",
        "-0x1.3dacc8d85f6c4p-5",
        "-0x1.193eb7b9bf564p-5",
        "-0x1.da39533524970p-6",
        "-0x1.81149bc4a104bp-6",
        "-0x1.3e981b3b13590p-6",
        "-0x1.0bc46cdc18fe6p-6",
        "-0x1.c82c132848f67p-7",
        "-0x1.8914e8736d77dp-7",
        "-0x1.5621e47157306p-7",
        "-0x1.2c6aebe4718c2p-7",
        "-0x1.f57cad15dbe3cp-8",
        "-0x1.93108c9356f33p-8",
        "-0x1.4ae8bbe708546p-8",
        "-0x1.14782b97452f2p-8",
        "-0x1.d4cddeef787a8p-9",
        "-0x1.9276b60443f7cp-9",
        "-0x1.5d3dd94e2ae31p-9",
        "-0x1.31e66a6386f9fp-9",
        "-0x1.0e23ef619e360p-9",
        "-0x1.e096c3c71f7f0p-10",
        "-0x1.ae41bec497d41p-10",
        "-0x1.836d6d4a6a460p-10",
        "-0x1.5eae9afb8256bp-10",
        "-0x1.3eebf4f31d394p-10",
        "-0x1.2348dd924b18cp-10",
        "-0x1.0b165e58f4594p-10",
        "-0x1.eb908f3f7b3b7p-11",
        "-0x1.c5da7001373c4p-11",
        "-0x1.a45161db933c4p-11",
        "-0x1.865d4727e2705p-11",
    ),
    _hex(
        "0x1.2577420fcd0a8p-2",
        "0x1.80ef8f454cfa6p-3",
        "0x1.05e72521ca1c2p-3",
        "0x1.701342cbcea83p-4",
        "0x1.0a15ac2adab38p-4",
        "0x1.8a6efeed233afp-5",
        "0x1.2adaf7aaf55e3p-5",
        "0x1.cdc880a056a25p-6",
        "0x1.6afd3ba3fa643p-6",
        "0x1.21c23afa33c47p-6",
        "0x1.d503e1d20090fp-7",
        "0x1.804cc15714188p-7",
        "0x1.3e68313870541p-7",
        "0x1.0a7a05d3387a8p-7",
        "0x1.9ef71691a5536p-8",
        "0x1.317c144f8b420p-8",
        "0x1.cdeae21161629p-9",
        "0x1.6535040e2c85cp-9",
        "0x1.19a2448fc71d9p-9",
        "0x1.c39a4935fa76ap-10",
        "0x1.6f68a6f3153a2p-10",
        "0x1.2ec8136aa630fp-10",
        "0x1.cea22f2be06e3p-11",
        "0x1.4dfd333e22452p-11",
        "0x1.f197309556b7cp-12",
        "0x1.7c66d2a104799p-12",
        "0x1.2937870fcdf60p-12",
        "0x1.d9243e5cacb1cp-13",
        "0x1.7eaa573db0fa9p-13",
        "0x1.39d30f8ceebcep-13",
        "0x1.04877d0063a6bp-13",
        "0x1.b54485023ab65p-14",
        "0x1.727fe320214a1p-14",
        "0x1.3ca5867af7d5cp-14",
        "0x1.10bbf3169a3c8p-14",
        "0x1.d925385ccdf30p-15",
        "0x1.9d0d6aa6ca843p-15",
        "0x1.6ab638dc5f303p-15",
        "0x1.403968c57fb6ep-15",
        "0x1.1c1e05ffcfa40p-15",
        "0x1.fa7994b33bd68p-16",
        "0x1.c558682584702p-16",
    ),
    _hex(
        "-0x1.59c35c06f8076p-3",
        "-0x1.9d5868de0b5cfp-4",
        "-0x1.01343a2c9227fp-4",
        "-0x1.4bcdb9d9083d5p-5",
        "-0x1.ba018e6428111p-6",
        "-0x1.2ef92f6f1079cp-6",
        "-0x1.aa2443aac74b6p-7",
        "-0x1.32a8abc8db399p-7",
        "-0x1.c28dd3c4d6776p-8",
        "-0x1.512f92fca6d78p-8",
        "-0x1.009a927223b07p-8",
        "-0x1.8c84c13afb9c5p-9",
        "-0x1.36992d37bc012p-9",
        "-0x1.ecb581c2b7f7ep-10",
        "-0x1.6373226edf583p-10",
        "-0x1.dc1af883a33f0p-11",
        "-0x1.49d492a39eb6bp-11",
        "-0x1.d662fda6d50fep-12",
        "-0x1.57e0ab4d7cb1ep-12",
        "-0x1.00e4e3d2d8509p-12",
        "-0x1.872cdb81fdf40p-13",
        "-0x1.2ed983856cc8cp-13",
        "-0x1.a80f2934e8c80p-14",
        "-0x1.134ff442607b0p-14",
        "-0x1.748157027972fp-15",
        "-0x1.04c1668352a82p-15",
        "-0x1.77b3f7978e1afp-16",
        "-0x1.1560775b6b460p-16",
        "-0x1.a2517ed700044p-17",
        "-0x1.414ce1ffcca97p-17",
        "-0x1.f59df6f4982d7p-18",
        "-0x1.8d36ddca2fb63p-18",
        "-0x1.3e956fa0e4453p-18",
        "-0x1.027643082657bp-18",
        "-0x1.a7ba08bba1922p-19",
        "-0x1.5e997103cd4fdp-19",
        "-0x1.2493715b9a62bp-19",
        "-0x1.ec2192fbda601p-20",
        "-0x1.a0de6c14e4980p-20",
        "-0x1.63734205be7e8p-20",
        "-0x1.30ee4987938cbp-20",
        "-0x1.071234db7fe35p-20",
    ),
    _hex(
        "0x1.72d46a9b1f67ep-4",
        "0x1.9831c2c83a8a9p-5",
        "0x1.d4e711a2d044bp-6",
        "0x1.17eba60d2c404p-6",
        "0x1.5a142948a5352p-7",
        "0x1.b99589d40b788p-8",
        "0x1.21decee0ec698p-8",
        "0x1.8680d28747d7ap-9",
        "0x1.0d40a2ab35f66p-9",
        "0x1.7b404aa4de344p-10",
        "0x1.104973fea2eaep-10",
        "0x1.8de5f26a7e1acp-11",
        "0x1.276b01ef6f723p-11",
        "0x1.bd21af8e75bdep-12",
        "0x1.2a660fdeafe7ep-12",
        "0x1.6cc10c161ae10p-13",
        "0x1.d03e19aa09f88p-14",
        "0x1.31dddbe4337a2p-14",
        "0x1.9f57d767b4380p-15",
        "0x1.21808c22d60abp-15",
        "0x1.9d0000a8e1dc0p-16",
        "0x1.2cab802c99751p-16",
        "0x1.82426c74e7dccp-17",
        "0x1.c3904bd3cdb49p-18",
        "0x1.15adcc42e0f7fp-18",
        "0x1.6433d10f64031p-19",
        "0x1.d976d0b3743d3p-20",
        "0x1.445d3c99e94f1p-20",
        "0x1.c83e256c7a07fp-21",
        "0x1.484a4e903bc94p-21",
        "0x1.e209aa452eba7p-22",
        "0x1.6841368b43491p-22",
        "0x1.118d070cace63p-22",
        "0x1.a564c9091abddp-23",
        "0x1.48c57e66bad84p-23",
        "0x1.03843fd907d8ap-23",
        "0x1.9e133df9695f3p-24",
        "0x1.4d90eb6ad1991p-24",
        "0x1.0f1e0580b2788p-24",
        "0x1.bc5ac677ae597p-25",
        "0x1.6eeaeaaf756d2p-25",
        "0x1.311d4c40a17edp-25",
    ),
    _hex(
        "-0x1.6fce5df084dc6p-5",
        "-0x1.779dd2a3b7be9p-6",
        "-0x1.910a5d7bf30b2p-7",
        "-0x1.bdf24bcc9bab9p-8",
        "-0x1.014eae282a0c3p-8",
        "-0x1.33237c3ee5ef7p-9",
        "-0x1.7a181925b7132p-10",
        "-0x1.deb45e9cfb101p-11",
        "-0x1.36e9940d2df1bp-11",
        "-0x1.9d6f22275cca1p-12",
        "-0x1.18d46547b3c19p-12",
        "-0x1.8511846d9f2d9p-13",
        "-0x1.1267afc4c546cp-13",
        "-0x1.8985979e24845p-14",
        "-0x1.eb88e0e8b9050p-15",
        "-0x1.12f1743bb42acp-15",
        "-0x1.4230e3cced31cp-16",
        "-0x1.8900e0bd211e6p-17",
        "-0x1.f0678072339a4p-18",
        "-0x1.433e288b7cfbep-18",
        "-0x1.b07c4a7e73016p-19",
        "-0x1.285655d25fea3p-19",
        "-0x1.5da898d7a1482p-20",
        "-0x1.7074a5b538e28p-21",
        "-0x1.9c3efbbaa0be7p-22",
        "-0x1.e4dce67f43b62p-23",
        "-0x1.296db577f3babp-23",
        "-0x1.7a51b09ec9a97p-24",
        "-0x1.f0785eacdd872p-25",
        "-0x1.4ec25b3a773c2p-25",
        "-0x1.ce66254c929b6p-26",
        "-0x1.463740bf22b55p-26",
        "-0x1.d5192e96917cfp-27",
        "-0x1.57139ee1933c0p-27",
        "-0x1.fd98a001abf57p-28",
        "-0x1.7fc8f9bbc684bp-28",
        "-0x1.24bb06969d270p-28",
        "-0x1.c3c75f2b98612p-29",
        "-0x1.605c8642a1ab4p-29",
        "-0x1.15897eb2d64d1p-29",
        "-0x1.b931e3a3ad2a0p-30",
        "-0x1.61a55321c17dcp-30",
    ),
    _hex(
        "0x1.552fe7870b2ccp-6",
        "0x1.45264931c3f1dp-7",
        "0x1.446c51a82b278p-8",
        "0x1.51aba02dd6653p-9",
        "0x1.6d609f9102bfbp-10",
        "0x1.99b60e622b276p-11",
        "0x1.dab55d89fff59p-12",
        "0x1.1b649ba699459p-12",
        "0x1.5bd1dd6db9084p-13",
        "0x1.b5d78b37df4c1p-14",
        "0x1.1a12c4a83cd71p-14",
        "0x1.7350e3a4f24ecp-15",
        "0x1.f28b1c3ba1697p-16",
        "0x1.54d6c39ebf505p-16",
        "0x1.8d8e5a00e0eb0p-17",
        "0x1.9818c0fb1f0b0p-18",
        "0x1.b93f47739d1b6p-19",
        "0x1.f31a328891e71p-20",
        "0x1.259fcb5724d39p-20",
        "0x1.65acd3d209ca5p-21",
        "0x1.c147c33def9c0p-22",
        "0x1.21fd16170ff76p-22",
        "0x1.3a9b824f46f98p-23",
        "0x1.2b25ec3c86a29p-24",
        "0x1.30be830a40a04p-25",
        "0x1.48d73b84e30c0p-26",
        "0x1.7490dc2565df5p-27",
        "0x1.b81a86c0a9855p-28",
        "0x1.0d829aae1e811p-28",
        "0x1.54acba91c6f4ep-29",
        "0x1.bac69a1b48fdap-30",
        "0x1.26ed3e15ed849p-30",
        "0x1.91a56919f3c98p-31",
        "0x1.16f52211db620p-31",
        "0x1.8a7a991d540c0p-32",
        "0x1.1b7ab495828b8p-32",
        "0x1.9d7dce6996e08p-33",
        "0x1.31abaf348fec3p-33",
        "0x1.c9939ce9d21f0p-34",
        "0x1.5a6db1c6685a5p-34",
        "0x1.0911729c57e20p-34",
        "0x1.99a114d4b0d05p-35",
    ),
    _hex(
        "-0x1.2a7f505bf96c6p-7",
        "-0x1.0ab38395d051bp-8",
        "-0x1.f38c6d9597943p-10",
        "-0x1.e8ae691b53874p-11",
        "-0x1.f1b43d87dc90cp-12",
        "-0x1.070e0cd3fb8eap-12",
        "-0x1.1fc89142df91ap-13",
        "-0x1.44f8e8d72bf4bp-14",
        "-0x1.79dac39318de8p-15",
        "-0x1.c35c652e113d2p-16",
        "-0x1.146359e3a9a2dp-16",
        "-0x1.5a61389364f31p-17",
        "-0x1.bb73ad9a2f950p-18",
        "-0x1.218709b5e0429p-18",
        "-0x1.3c0776eda4395p-19",
        "-0x1.2a625a8dd9d67p-20",
        "-0x1.2a43533052692p-21",
        "-0x1.395be09d9c5fep-22",
        "-0x1.57ec1a146b0fap-23",
        "-0x1.884f46e53c4c6p-24",
        "-0x1.cf16f8d39e758p-25",
        "-0x1.19cc082cdcd4bp-25",
        "-0x1.19624111284d8p-26",
        "-0x1.e35fb17337d8cp-28",
        "-0x1.c0b498a52210cp-29",
        "-0x1.bc802d92513c4p-30",
        "-0x1.d14be28b155c9p-31",
        "-0x1.fea8dcda03d6ap-32",
        "-0x1.23f3334314b83p-32",
        "-0x1.5a01dd77eeabbp-33",
        "-0x1.a73d42d7c2400p-34",
        "-0x1.0a383ed585213p-34",
        "-0x1.57684f4a6f3f5p-35",
        "-0x1.c510c845a06b5p-36",
        "-0x1.310362035a96bp-36",
        "-0x1.a25654e2ee24bp-37",
        "-0x1.23c0d55805496p-37",
        "-0x1.9d43569bd49d9p-38",
        "-0x1.28dca4c208290p-38",
        "-0x1.b0180a7c4fca8p-39",
        "-0x1.3e47e54fb0a83p-39",
        "-0x1.da2a8cf4b6ddcp-40",
    ),
    _hex(
        "0x1.efce33ae0e291p-9",
        "0x1.a0ee1dc74178fp-10",
        "0x1.6fd8a975fcfc9p-11",
        "0x1.535e9b533152dp-12",
        "0x1.465e395751925p-13",
        "0x1.46314bfd0cfaap-14",
        "0x1.51e01fc76c277p-15",
        "0x1.69c2eb0dcdbd2p-16",
        "0x1.8f68e191a4b6ep-17",
        "0x1.c5b43bcdb2bfep-18",
        "0x1.089473a424a46p-18",
        "0x1.3c3b496fb9343p-19",
        "0x1.82a8f44085f43p-20",
        "0x1.e2df68122b456p-21",
        "0x1.ee3144b2b5338p-22",
        "0x1.ae1e545fcc084p-23",
        "0x1.8e3664baf3a9fp-24",
        "0x1.85304d2ea6bf2p-25",
        "0x1.8ef4e4a23b9b5p-26",
        "0x1.aa9e8c51c082ap-27",
        "0x1.d9aeb67f0fe7ep-28",
        "0x1.0ff6b4451c1d6p-28",
        "0x1.f45fcdee51848p-30",
        "0x1.84a159577b8b9p-31",
        "0x1.48feac9beb076p-32",
        "0x1.2b629323023a3p-33",
        "0x1.21b1d9291f852p-34",
        "0x1.27812240429f2p-35",
        "0x1.3b8cb756caf3ep-36",
        "0x1.5ebab6724cf7fp-37",
        "0x1.93db074f038d5p-38",
        "0x1.dfdc6de86f44ap-39",
        "0x1.25333b4b85a31p-39",
        "0x1.6f73e35b2fa41p-40",
        "0x1.d721a25ed4f45p-41",
        "0x1.3459b3f7076bdp-41",
        "0x1.9b511e2fbd790p-42",
        "0x1.171dc134af5f8p-42",
        "0x1.80e042792fc20p-43",
        "0x1.0d44ad6005883p-43",
        "0x1.7de8ac3bf21b6p-44",
        "0x1.1241d2eabf4bcp-44",
    ),
    _hex(
        "-0x1.88eda6456a702p-10",
        "-0x1.37fd2e03f4b6fp-11",
        "-0x1.041d5d409896ap-12",
        "-0x1.c5f9316c29fb2p-14",
        "-0x1.9d613dc0f7936p-15",
        "-0x1.87a5675517a94p-16",
        "-0x1.8103ffd915762p-17",
        "-0x1.87bbd5c524075p-18",
        "-0x1.9b85b2abef3adp-19",
        "-0x1.bd5e4e0b1d2a7p-20",
        "-0x1.ef889307dfcd2p-21",
        "-0x1.1ae01470e501cp-21",
        "-0x1.4acf8e64348eap-22",
        "-0x1.8ba193a7cec94p-23",
        "-0x1.7c5466aaf7120p-24",
        "-0x1.31c2988575134p-25",
        "-0x1.06a2d9f5cc0c4p-26",
        "-0x1.de412e412e329p-28",
        "-0x1.ca75f2db45436p-29",
        "-0x1.cc0f3cc24538dp-30",
        "-0x1.e0e6f2b984247p-31",
        "-0x1.04b6a9fa9b884p-31",
        "-0x1.ba5826b342debp-33",
        "-0x1.36f8ae1aad0f7p-34",
        "-0x1.e0847a81c54cbp-36",
        "-0x1.91ebc9498571ep-37",
        "-0x1.67ad2785c1154p-38",
        "-0x1.5522398217e5ep-39",
        "-0x1.544cdeda7196ep-40",
        "-0x1.62d1db82f8a56p-41",
        "-0x1.80b06b09c3fd6p-42",
        "-0x1.afcd4ec7139d2p-43",
        "-0x1.f3f7538152864p-44",
        "-0x1.29a404028d455p-44",
        "-0x1.6b716ee6d8a69p-45",
        "-0x1.c615d6a9df13ep-46",
        "-0x1.21a9544e172bfp-46",
        "-0x1.78b21eef714e8p-47",
        "-0x1.f2944f31d2303p-48",
        "-0x1.4f591923b3dddp-48",
        "-0x1.c9f0021b8c90fp-49",
        "-0x1.3d0de7229259dp-49",
    ),
    _hex(
        "0x1.2c38d7117c8f7p-11",
        "0x1.c3269f9ed1b5ep-13",
        "0x1.6433db69d31c2p-14",
        "0x1.269df2b671d3dp-15",
        "0x1.fd0978378bfa1p-17",
        "0x1.ca0624d740cc3p-18",
        "0x1.ac19b60e40089p-19",
        "0x1.9e99a88c71694p-20",
        "0x1.9f105b76b63d0p-21",
        "0x1.ac97721ba94b4p-22",
        "0x1.c7891b4950486p-23",
        "0x1.f16aab478bd40p-24",
        "0x1.1681f23bf45edp-24",
        "0x1.3f5076f6f9681p-25",
        "0x1.222899c83c28dp-26",
        "0x1.af5daf36c1024p-28",
        "0x1.5810dc22486e8p-29",
        "0x1.240f2ec132800p-30",
        "0x1.05fbb433ed0cfp-31",
        "0x1.edb15902b3761p-33",
        "0x1.e6146fe956389p-34",
        "0x1.f1ddb592471dfp-35",
        "0x1.8854d43734ed3p-36",
        "0x1.f2fcbd87a5a51p-38",
        "0x1.5faf148c8277bp-39",
        "0x1.0e48bf21535fbp-40",
        "0x1.bf4343c8268e6p-42",
        "0x1.8a56c9e1038f7p-43",
        "0x1.6f6bfa6d1a6dap-44",
        "0x1.67538a4c744f4p-45",
        "0x1.6ec3c8ef98a3fp-46",
        "0x1.84deb7509ba48p-47",
        "0x1.aa94a5cb04cdcp-48",
        "0x1.e27faf342850ap-49",
        "0x1.1888f9aee7e7bp-49",
        "0x1.4e876386c3d07p-50",
        "0x1.982d2b1eb7e7ap-51",
        "0x1.fc9e403866d63p-52",
        "0x1.43121abce5bcap-52",
        "0x1.a1cdccfc7622ap-53",
        "0x1.12a5eacafd0cfp-53",
        "0x1.6ea68b01919a2p-54",
    ),
    _hex(
        "-0x1.b6c4f8b64f9e4p-13",
        "-0x1.38e584e53a262p-14",
        "-0x1.d5398f8694a43p-16",
        "-0x1.70d3e99851754p-17",
        "-0x1.2f0ce54b3ec79p-18",
        "-0x1.039396dc784c1p-19",
        "-0x1.ce5a96bdc2985p-21",
        "-0x1.ab151a0347ecep-22",
        "-0x1.983940d08822ap-23",
        "-0x1.92e3ce889c0bdp-24",
        "-0x1.99b8cddf4f3f2p-25",
        "-0x1.ac86e7f9b4f0cp-26",
        "-0x1.cc218009b4de4p-27",
        "-0x1.fa627c419aa82p-28",
        "-0x1.b1de5c8856717p-29",
        "-0x1.2af62ed92fc5dp-30",
        "-0x1.bbd0bc4112442p-32",
        "-0x1.5fde168d036abp-33",
        "-0x1.27cf66d02d31ap-34",
        "-0x1.060c373f26f81p-35",
        "-0x1.e69608bf84c71p-37",
        "-0x1.d740e689498b4p-38",
        "-0x1.576b1a7d3cccdp-39",
        "-0x1.8c02da7143fafp-41",
        "-0x1.fe1e90dc394d8p-43",
        "-0x1.68b9720e22514p-44",
        "-0x1.14404cafb0ba4p-45",
        "-0x1.c53add2c867f2p-47",
        "-0x1.8ab71ec6dfc8fp-48",
        "-0x1.6a47d77eb1aa8p-49",
        "-0x1.5c4d4b8ede064p-50",
        "-0x1.5cfa12010363bp-51",
        "-0x1.6ad164df0a7cep-52",
        "-0x1.85f7f78d2b175p-53",
        "-0x1.aff5515b3e471p-54",
        "-0x1.ebbcb959c8f6ap-55",
        "-0x1.1ef822d67acdep-55",
        "-0x1.56b04566841ddp-56",
        "-0x1.a1ebfcca45011p-57",
        "-0x1.03d38fbabc18cp-57",
        "-0x1.48ec573cca9a8p-58",
        "-0x1.a762cc719b05cp-59",
    ),
)
_INV_SQRT2 = _hex(
    "0x1.6a09e667f3bcdp-1",
    "-0x1.bdd3413b26456p-55",
)
# CONSTANTS-END

_EXP_TABLE = np.array(_EXP_TABLE_BITS, dtype=np.uint64)
_SHIFT = float.fromhex("0x1.8p52")  # x + 1.5 * 2**52 rounds x to an integer held in the low bits
_U = np.uint64
_EXP_INDEX_MASK = _U(127)
_EXP_TOP_SHIFT = _U(45)  # k << 45 puts k // 128 in the exponent field (52 - 7 bits of table index)
_EXPONENT_SHIFT = _U(52)
_NORMAL_MIN_BITS = _U(0x0010000000000000)
_INF_BITS = _U(0x7FF0000000000000)
# Bits of sqrt(2)/2, moved so that (bits(x) + _LOG_OFFSET) >> 52 is 1024 + k with x / 2**k in
# [sqrt(2)/2, sqrt(2)) for every positive normal x, and never negative.
_SQRT_HALF_BITS = _U(0x3FE6A09E667F3BCD)
_LOG_OFFSET = _U((1024 << 52) - 0x3FE6A09E667F3BCD)
_MANTISSA_MASK = _U((1 << 52) - 1)
_NARROW_EXP_RANGE = (-110.0, 90.0)  # exp rounds to 0 below and to inf above in float32 and float16
# |x| <= 700: exp(x) is at least 2**-1010, so neither 2**(k/128) nor s*tmp is subnormal or overflows
_WIDE_EXP_LIMIT = 700.0
_EXPM1_FLOOR = -40.0  # expm1(x) rounds to -1 below, in every type
_NORMAL_MIN = math.ldexp(1.0, -1022)
_SPLITTER = float(2**27 + 1)  # Veltkamp's constant for float64
# 2/3 and 2/5 as head + tail, and 2/(2i + 7): Python's float division and Fraction's conversion
# round correctly, so these are the same on every machine.
_TWO_THIRDS = (2.0 / 3.0, float(Fraction(2, 3) - Fraction(2.0 / 3.0)))
_TWO_FIFTHS = (2.0 / 5.0, float(Fraction(2, 5) - Fraction(2.0 / 5.0)))
_LOG_SERIES_TAIL = np.array([2.0 / (2 * i + 7) for i in range(11)])
_POW_EXPONENT_LIMIT = math.ldexp(1.0, 900)
_HYPERBOLIC_LARGE = float(2**28)  # beyond: asinh(x) = log(2x), acosh(x) = log(2x) to 2**-58
_ERF_LAST = 6.0  # erf rounds to 1 in float64 from about 5.92 on
_ERF_SCALE = 4.0  # intervals of width 1/4
_ERFC_START, _ERFC_END = 0.5, 28.0  # R's intervals; erfc(28) < 2**-1130 (Gelu rounds to -0)
_GELU_ERFC_FROM = 0.75  # Gelu takes the erfc form for x <= -3/4 (z = -x / sqrt 2 >= 0.53)
_ERFC_ROWS = np.ascontiguousarray(np.stack(_ERFC_TABLE, axis=1))  # (42, 13): centre, coefficients


# --- the cores: float64 blocks in, float64 blocks out ---------------------------------------------


def _clip(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """min(max(x, low), high), NaN staying NaN: what np.clip computes (numpy defines its clip so),
    without np.clip's Python wrapper, which costs 2 to 3 us a call on the small arrays of a batch-1
    model."""
    y = np.maximum(x, low)
    return np.minimum(y, high, out=y) if isinstance(y, np.ndarray) else np.minimum(y, high)


def _horner(coeffs: np.ndarray, t: np.ndarray) -> np.ndarray:
    """c[0] + t*(c[1] + t*(c[2] + ...)), from the innermost coefficient out, one multiply and one
    add per coefficient."""
    p = t * coeffs[-1]
    for c in coeffs[-2:0:-1]:
        p += c
        p *= t
    p += coeffs[0]
    return p


def _exp_parts(
    x: np.ndarray, wide: bool, bias: int = 0, low: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(s, tmp) with exp(x + low) = 2**bias * (s + s*tmp), for float64 x whose 2**(k/128) / 2**bias
    is a normal float64; `wide` selects float64 accuracy (else enough for a float32 result); `low`,
    a correction far below x's ulp (pow's double-length argument), is added to r after step 2.

    1. k = rint(x * 128/ln2): x * (128/ln2) + 1.5*2**52 leaves k in the low mantissa bits;
       kd = that - 1.5*2**52 is k as a float.
    2. r = (x - kd*LN2_N_HI) - kd*LN2_N_LO, |r| <= ln2/256; the head has 35 bits, so kd*HI and the
       first subtraction are exact (Cody-Waite).
    3. s = 2**(k/128) / 2**bias: the table holds 2**(j/128) (j = k mod 128) with j << 45 taken off
       its bits, so adding (k << 45) mod 2**64 to them puts k // 128 into the exponent field.
    4. tmp = r + (r*r) * p(r), p by Horner (degree 3 wide, 2 narrow): exp(r) - 1; wide, the table
       entry's relative rounding remainder tail_j = 2**(j/128) / T_j - 1 (T_j the double in the
       table) is added first: tmp = (tail_j + r) + (r*r) * p(r).
    """
    kd = x * _EXP_INV_LN2_N
    kd += _SHIFT
    bits = kd.view(np.uint64)
    index = (bits & _EXP_INDEX_MASK).view(np.intp)
    top = bits << _EXP_TOP_SHIFT
    if bias:
        top -= _U(bias % 4096) << _EXPONENT_SHIFT
    kd -= _SHIFT
    r = kd * _EXP_LN2_N_HI
    np.subtract(x, r, out=r)
    kd *= _EXP_LN2_N_LO
    r -= kd
    if low is not None:
        r += low
    s = np.take(_EXP_TABLE, index)
    s += top
    tmp = _horner(_EXP_POLY_64 if wide else _EXP_POLY_32, r)
    tmp *= r * r
    if wide:
        tmp += np.take(_EXP_TABLE_TAIL, index) + r
    else:
        tmp += r
    return s.view(np.float64), tmp


def _exp_core(x: np.ndarray, wide: bool, low: np.ndarray | None = None) -> np.ndarray:
    """exp(x + low) = s + s*tmp (see _exp_parts), for x whose result is a normal float64."""
    s, tmp = _exp_parts(x, wide, 0, low)
    tmp *= s
    tmp += s
    return tmp


def _exp_far(x: np.ndarray, low: np.ndarray | None = None) -> np.ndarray:
    """exp(x + low) for float64 x outside [-700, 700] or NaN, rounded once.

    x > 700: the core with 2**512 taken out of s, multiplied back at the end (exact, or the
    overflow to inf). x < -700: 2**1022 taken out, y = s + s*tmp; where y < 1 the result is
    subnormal and must be rounded at 2**-1074, i.e. at 2**-52 before scaling: with lo the rounding
    error of y (Fast2Sum: (s - y) + s*tmp) and hi = 1 + y, ((hi + lo') - 1) rounds once there, lo'
    adding hi's own rounding error ((1 - hi) + y) to lo. Then the exact scaling by 2**-1022.
    """
    x = _clip(x, -746.0, 710.0)  # beyond: 0 and inf all the same; NaN stays NaN
    y = np.empty_like(x)
    high = x > 0
    if high.any():
        s, tmp = _exp_parts(x[high], True, 512, None if low is None else low[high])
        y[high] = (s + s * tmp) * math.ldexp(1.0, 512)
    rest = ~high
    if rest.any():
        s, tmp = _exp_parts(x[rest], True, -1022, None if low is None else low[rest])
        tmp *= s
        scaled = s + tmp
        lo = s - scaled
        lo += tmp
        hi = scaled + 1.0
        lo += (1.0 - hi) + scaled
        hi += lo
        hi -= 1.0
        y[rest] = np.where(scaled < 1.0, hi, scaled) * math.ldexp(1.0, -1022)
    return y


def _exp_block(x: np.ndarray, wide: bool, low: np.ndarray | None = None) -> np.ndarray:
    """exp(x) (plus a float64 correction `low` to the argument: pow's)."""
    if not wide:
        return _exp_core(_clip(x, *_NARROW_EXP_RANGE), False)
    y = _exp_core(_clip(x, -_WIDE_EXP_LIMIT, _WIDE_EXP_LIMIT), True, low)
    far = ~(np.abs(x) <= _WIDE_EXP_LIMIT)
    if far.any():
        y[far] = _exp_far(x[far], None if low is None else low[far])
    return y


def exp_double_length(
    x: np.ndarray, low: np.ndarray, bias: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """exp(x + low) as 2**bias * (hi + lo) for float64 x <= 0 (or NaN) and a correction
    |low| <= ulp(x): float64 softmax's exponentials (runtime_support.exact).

    bias = 0, x >= -700: s, tmp of _exp_parts (wide, `low` added to r); hi = s + s*tmp rounded and
    lo = (s - hi) + s*tmp, Fast2Sum's error (|s*tmp| < |s|), so hi + lo is exp(x + low) to the
    polynomial's 2**-63.7 and s*tmp's own rounding (|s*tmp| < 2**-7 s, so below 2**-60 of the
    result). bias = 0, x < -700 (and NaN): exact_exp's value of x + low rounded once (_exp_far,
    normal, subnormal or 0) and lo = 0. bias = -512, for x in [-1000, -700] (clipped there:
    below, exp rounds to 0 in float64 whatever the scale): the same double-length value of
    exp(x + low) * 2**512, which is normal, for a caller that scales back once at the end. Blocks
    of _BLOCK elements; every element's result depends on that element alone."""
    x, low = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(low, np.float64))
    flat, flat_low = x.reshape(-1), low.reshape(-1)
    hi, lo = np.empty(flat.size), np.empty(flat.size)
    with np.errstate(all="ignore"):
        for start in range(0, flat.size, _BLOCK):
            block = slice(start, start + _BLOCK)
            chunk, chunk_low = flat[block], flat_low[block]
            if bias:
                chunk = _clip(chunk, -1000.0, -_WIDE_EXP_LIMIT)
            else:
                chunk = np.maximum(chunk, -_WIDE_EXP_LIMIT)
            s, tmp = _exp_parts(chunk, True, bias, chunk_low)
            tmp *= s
            head = s + tmp
            s -= head
            s += tmp
            far = ~(flat[block] >= -_WIDE_EXP_LIMIT)
            if not bias and far.any():
                head[far] = _exp_far(flat[block][far], chunk_low[far])
                s[far] = 0.0
            hi[block], lo[block] = head, s
    return hi.reshape(x.shape), lo.reshape(x.shape)


def _expm1_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """expm1(x) = (s - 1) + s*tmp: s - 1 is exact for s in [1/2, 2] and k = 0 gives s = 1, tail 0,
    r = x, so small x keep their relative accuracy. The sign is x's (expm1(-0) = -0)."""
    high = _WIDE_EXP_LIMIT if wide else _NARROW_EXP_RANGE[1]
    s, tmp = _exp_parts(_clip(x, _EXPM1_FLOOR, high), wide)
    tmp *= s
    s -= 1.0
    tmp += s
    if wide:
        far = ~(x <= _WIDE_EXP_LIMIT)
        if far.any():
            tmp[far] = _exp_far(x[far])
    return np.copysign(tmp, x, out=tmp)


def _log_reduce(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k, f) with x = 2**k * (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)), for positive normal float64 x,
    by integer arithmetic on the bits (k exact as a float, f = m - 1 exact): with
    t = bits(x) - bits(sqrt(2)/2) + (1024 << 52), k = (t >> 52) - 1024 and m has the bits
    (t mod 2**52) + bits(sqrt(2)/2)."""
    t = x.view(np.uint64) + _LOG_OFFSET
    m = t & _MANTISSA_MASK
    m += _SQRT_HALF_BITS
    t >>= _EXPONENT_SHIFT
    k = t.view(np.int64).astype(np.float64)
    k -= 1024.0
    f = m.view(np.float64)
    f -= 1.0
    return k, f


def _log_combine(
    k: np.ndarray, f: np.ndarray, wide: bool, c: np.ndarray | None = None
) -> np.ndarray:
    """log(2**k * (1 + f)) + c, with c a small correction (log1p's) or nothing.

    s = f / (2 + f), so log(1 + f) = 2 atanh(s) = 2s + s*R, R = z * h(z), z = s*s, h by Horner
    (7 coefficients wide, 6 narrow). With hfsq = 0.5*f*f, 2s = f - hfsq + s*hfsq, and the result is
    gathered as k*LN2_HI - ((hfsq - (s*(hfsq + R) + (k*LN2_LO + c))) - f): k*LN2_HI is exact
    (42-bit head), and the small terms meet before the large ones.
    """
    s = 2.0 + f
    np.divide(f, s, out=s)
    z = s * s
    r = _horner(_LOG_POLY_64 if wide else _LOG_POLY_32, z)
    r *= z
    hfsq = f * f
    hfsq *= 0.5
    r += hfsq
    r *= s
    low = k * _LOG_LN2_LO
    if c is not None:
        low += c
    r += low
    np.subtract(hfsq, r, out=r)
    r -= f
    k *= _LOG_LN2_HI
    return np.subtract(k, r, out=k)


def _log_special(x: np.ndarray, wide: bool) -> np.ndarray:
    """log of zeros (-inf), negatives (NaN), +inf, NaN and float64 subnormals (scaled by 2**54)."""
    y = np.where(x == 0.0, -np.inf, np.where(x < 0.0, np.nan, x))  # +inf and NaN are their own log
    tiny = (x > 0.0) & (x < np.inf)
    if tiny.any():
        k, f = _log_reduce(x[tiny] * math.ldexp(1.0, 54))
        k -= 54.0
        y[tiny] = _log_combine(k, f, wide)
    return y


def _irregular(x: np.ndarray) -> np.ndarray:
    """True where x is not a positive normal float64 (zero, subnormal, negative, inf, NaN)."""
    return (x.view(np.uint64) - _NORMAL_MIN_BITS) >= (_INF_BITS - _NORMAL_MIN_BITS)


def _log_block(x: np.ndarray, wide: bool) -> np.ndarray:
    y = _log_combine(*_log_reduce(x), wide)
    irregular = _irregular(x)
    if irregular.any():
        y[irregular] = _log_special(x[irregular], wide)
    return y


def _log1p_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """log1p(x) = log(u) + c with u = 1 + x rounded and c = (x - (u - 1)) / u: u - 1 and x - (u - 1)
    are exact, so c carries what the rounding of u lost. The sign is x's (log1p(-0) = -0)."""
    u = x + 1.0
    c = u - 1.0
    np.subtract(x, c, out=c)
    c /= u
    y = _log_combine(*_log_reduce(u), wide, c)
    irregular = ~(x > -1.0) | (x == np.inf)
    if irregular.any():
        y[irregular] = _log_special(u[irregular], wide)  # -1: -inf, below: NaN, inf, NaN
    return np.copysign(y, x, out=y)


def _sigmoid_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """e = exp(-|x|); 1/(1 + e) for x >= 0, e/(1 + e) otherwise: no overflow, no cancellation."""
    e = _exp_block(-np.abs(x), wide)
    return np.where(x >= 0.0, 1.0, e) / (e + 1.0)


def _tanh_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """tanh(|x|) = -e / (2 + e) with e = expm1(-2|x|) (no cancellation near 0), sign of x."""
    e = _expm1_block(-2.0 * np.abs(x), wide)
    y = e + 2.0
    np.divide(e, y, out=y)
    np.negative(y, out=y)
    return np.copysign(y, x, out=y)


def _half_exp_far(a: np.ndarray) -> np.ndarray:
    """exp(a) / 2 for float64 a > 700 (finite up to 710.47 though exp overflows from 709.78): the
    core with 2**512 taken out of s and 2**511 put back."""
    s, tmp = _exp_parts(np.minimum(a, 711.0), True, 512)
    s += s * tmp
    return s * math.ldexp(1.0, 511)


def _sinh_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """sinh|x| = (E + E/(E + 1)) / 2 with E = expm1|x| (no cancellation near 0, all terms >= 0);
    float64 |x| > 700: exp|x| / 2 (see _half_exp_far). The sign is x's."""
    a = np.abs(x)
    e = _expm1_block(np.minimum(a, _WIDE_EXP_LIMIT if wide else _NARROW_EXP_RANGE[1]), wide)
    y = e + 1.0
    np.divide(e, y, out=y)
    y += e
    y *= 0.5
    if wide:
        far = a > _WIDE_EXP_LIMIT
        if far.any():
            y[far] = _half_exp_far(a[far])
    return np.copysign(y, x, out=y)


def _cosh_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """cosh x = e/2 + (1/2)/e with e = exp|x| (both terms positive); float64 |x| > 700: e/2 (see
    _half_exp_far)."""
    a = np.abs(x)
    e = _exp_block(np.minimum(a, _WIDE_EXP_LIMIT if wide else _NARROW_EXP_RANGE[1]), wide)
    y = 0.5 / e
    y += e * 0.5
    if wide:
        far = a > _WIDE_EXP_LIMIT
        if far.any():
            y[far] = _half_exp_far(a[far])
    return y


def _log_of_double(a: np.ndarray, wide: bool) -> np.ndarray:
    """log(2a) for a >= 2**28 (inf included), without forming 2a: k + 1 in exact_log's method."""
    k, f = _log_reduce(a)
    k += 1.0
    y = _log_combine(k, f, wide)
    y[a == np.inf] = np.inf
    return y


def _asinh_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """asinh|x| = log1p(|x| + x**2 / (1 + sqrt(1 + x**2))) (the argument of log1p is exact
    algebra for sqrt(1 + x**2) - 1 + |x|, without cancellation); |x| >= 2**28: log(2|x|). The sign
    is x's."""
    a = np.abs(x)
    square = a * a
    t = square + 1.0
    np.sqrt(t, out=t)
    t += 1.0
    np.divide(square, t, out=t)
    t += a
    y = _log1p_block(t, wide)
    large = ~(a < _HYPERBOLIC_LARGE) & ~np.isnan(a)
    if large.any():
        y[large] = _log_of_double(a[large], wide)
    return np.copysign(y, x, out=y)


def _acosh_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """acosh x = log1p(t + sqrt(t * (t + 2))) with t = x - 1 (exact near 1); x >= 2**28:
    log(2x); NaN below 1."""
    t = x - 1.0
    root = t + 2.0
    root *= t
    np.sqrt(root, out=root)
    root += t
    y = _log1p_block(root, wide)
    large = x >= _HYPERBOLIC_LARGE
    if large.any():
        y[large] = _log_of_double(x[large], wide)
    y[~(x >= 1.0)] = np.nan
    return y


def _atanh_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """atanh|x| = log1p(2|x| / (1 - |x|)) / 2: inf at 1, NaN beyond (log1p of less than -1). The
    sign is x's."""
    a = np.abs(x)
    t = 1.0 - a
    np.divide(a + a, t, out=t)
    y = _log1p_block(t, wide)
    y *= 0.5
    return np.copysign(y, x, out=y)


def _softplus_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """max(x, 0) + log1p(exp(-|x|)): exp never overflows and the log1p term stays accurate when it
    is the whole result (x very negative)."""
    y = _log1p_block(_exp_block(-np.abs(x), wide), wide)
    y += np.maximum(x, 0.0)
    return y


def _erf_block(x: np.ndarray, wide: bool) -> np.ndarray:
    """erf by a degree-11 polynomial on the interval of width 1/4 that holds |x|.

    Interval i = floor(4|x|) (|x| >= 6 uses interval 24, the constant 1); t = |x| - centre_i
    (centre 0 for interval 0, whose polynomial is t * q(t) so erf keeps its relative accuracy near
    0); Horner from the degree-11 coefficient down, each coefficient looked up for the element's
    interval; the sign is x's. NaN stays NaN (it enters t, not the interval number).
    """
    a = np.abs(x)
    index = np.floor(np.where(a < _ERF_LAST, a, _ERF_LAST) * _ERF_SCALE).astype(np.intp)
    t = np.minimum(a, _ERF_LAST)
    t -= np.take(_ERF_CENTRES, index)
    p = t * np.take(_ERF_COEFFS[-1], index)
    for column in _ERF_COEFFS[-2:0:-1]:
        p += np.take(column, index)
        p *= t
    p += np.take(_ERF_COEFFS[0], index)
    return np.copysign(p, x, out=p)


def _erfc_scaled(z: np.ndarray) -> np.ndarray:
    """R(z) = erfc(z) exp(z**2) for z in [1/2, 28] (clipped there) by a degree-11 polynomial in
    z - centre on the interval that holds z: width 1/4 below 4, 1/2 below 8, 1 up to 28 (42
    intervals; each row of _ERFC_ROWS is the centre and the coefficients from degree 0 up)."""
    z = _clip(z, _ERFC_START, _ERFC_END)
    index = np.where(
        z < 4.0, np.floor(z * 4.0) - 2.0, np.where(z < 8.0, np.floor(z * 2.0) + 6.0, z + 14.0)
    )
    index = np.minimum(np.floor(index), _ERFC_ROWS.shape[0] - 1).astype(np.intp)
    row = np.take(_ERFC_ROWS, index, axis=0)
    t = z - row[:, 0]
    p = t * row[:, -1]
    for degree in range(_ERFC_ROWS.shape[1] - 3, 0, -1):
        p += row[:, 1 + degree]
        p *= t
    p += row[:, 1]
    return p


def _gelu_far(x: np.ndarray) -> np.ndarray:
    """Gelu (0.5 x) erfc(-x / sqrt 2) for finite float64 x <= -3/4, where 1 + erf(x / sqrt 2)
    would cancel: z = -x / sqrt 2 double-length (Dekker's product with the two-part 1/sqrt 2),
    z**2 double-length, exp(-z**2) = e_hi + e_lo (exp_double_length), R(z) = erfc(z) exp(z**2)
    by _erfc_scaled at z's head; g = (0.5 x) R(z), the result g e_hi + g e_lo (g first, so that
    a subnormal exponential rounds once)."""
    a = np.minimum(-x, 40.0)  # beyond, exp(-z**2) is 0 anyway; keeps Veltkamp's split finite
    z_hi, z_lo = _two_product(a, np.full_like(a, _INV_SQRT2[0]))
    z_lo += a * _INV_SQRT2[1]
    z_hi, z_lo = _fast_two_sum(z_hi, z_lo)
    q_hi, q_lo = _two_product(z_hi, z_hi)
    q_lo += 2.0 * z_hi * z_lo
    q_hi, q_lo = _fast_two_sum(q_hi, q_lo)
    e_hi, e_lo = exp_double_length(-q_hi, -q_lo)
    g = (0.5 * x) * _erfc_scaled(z_hi)
    return g * e_hi + g * e_lo


def gelu_erf64(x: np.ndarray) -> np.ndarray:
    """Gelu (0.5 x)(1 + erf(x / sqrt 2)) of float64 x, in float64 (unrounded): for x > -3/4 (and
    NaN, -inf) that formula with exact_erf; for finite x <= -3/4, where 1 + erf cancels (relative
    error up to 2**-53 / erfc(z) before), the erfc form of _gelu_far."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray((0.5 * x) * (1.0 + exact_erf(x / np.float64(1.4142135623730951))))
    far = (x <= -_GELU_ERFC_FROM) & (x > -np.inf)
    if far.any():
        with np.errstate(all="ignore"):
            y[far] = _gelu_far(x[far])
    return y


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split: a = hi + lo exactly, each of at most 26 significant bits (|a| < 2**995)."""
    c = a * _SPLITTER
    hi = c - (c - a)
    return hi, a - hi


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's product: a*b = p + e exactly, p = a*b rounded (no fused multiply-add needed)."""
    p = a * b
    a_hi, a_lo = _split(a)
    b_hi, b_lo = _split(b)
    e = a_hi * b_hi - p
    e += a_hi * b_lo
    e += a_lo * b_hi
    e += a_lo * b_lo
    return p, e


def _fast_two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a + b = s + e exactly, for |a| >= |b| (or a zero)."""
    total = a + b
    return total, b - (total - a)


def _log_double(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(a) = hi + lo with a relative error near 2**-64, for positive finite float64 a (float64
    subnormals scaled by 2**54 first); garbage elsewhere.

    With x = 2**k (1 + f) as in exact_log (f exact) and s = f / (2 + f):
    log(1 + f) = 2s + (2/3)s**3 + (2/5)s**5 + s**7 * h3(s**2), h3(z) = sum 2 z**i / (2i + 7),
    i = 0..10 (the series itself: its first omitted term is below 2**-56 of h3 here). s, s**2,
    s**3, s**5, (2/3)s**3 and (2/5)s**5 are carried as double-length values (Dekker's products, the
    quotient's remainder) and the three leading terms added by exact sums; h3's term, below 2**-18
    of the result, in plain float64. Then k*ln2 (42-bit head, exact; tail) is added with an exact
    sum and the pair renormalised.
    """
    tiny = a < _NORMAL_MIN
    k, f = _log_reduce(np.where(tiny, a * math.ldexp(1.0, 54), a))
    k -= np.where(tiny, 54.0, 0.0)
    d_hi, d_lo = _fast_two_sum(np.full_like(f, 2.0), f)
    s_hi = f / d_hi
    p, e = _two_product(s_hi, d_hi)
    s_lo = f - p  # exact: p is within an ulp of f
    s_lo -= e
    s_lo -= s_hi * d_lo
    s_lo /= d_hi
    q_hi, q_lo = _two_product(s_hi, s_hi)  # s**2
    q_lo += 2.0 * s_hi * s_lo
    c_hi, c_lo = _two_product(q_hi, s_hi)  # s**3
    c_lo += q_hi * s_lo + q_lo * s_hi
    t_hi, t_lo = _two_product(c_hi, _TWO_THIRDS[0])  # (2/3) s**3
    t_lo += c_hi * _TWO_THIRDS[1] + c_lo * _TWO_THIRDS[0]
    v_hi, v_lo = _two_product(c_hi, q_hi)  # s**5
    v_lo += c_hi * q_lo + c_lo * q_hi
    w_hi, w_lo = _two_product(v_hi, _TWO_FIFTHS[0])  # (2/5) s**5
    w_lo += v_hi * _TWO_FIFTHS[1] + v_lo * _TWO_FIFTHS[0]
    tail = _horner(_LOG_SERIES_TAIL, q_hi)
    tail *= v_hi * q_hi  # s**7 h3(s**2)
    u_hi, u_lo = _fast_two_sum(2.0 * s_hi, t_hi)
    u_hi, err = _fast_two_sum(u_hi, w_hi)
    u_lo += err
    u_lo += 2.0 * s_lo + (t_lo + (w_lo + tail))
    head = k * _LOG_LN2_HI  # exact
    total = head + u_hi  # an exact two-sum (no order between the magnitudes)
    back = total - head
    err = (head - (total - back)) + (u_hi - back)
    err += u_lo + k * _LOG_LN2_LO
    return _fast_two_sum(total, err)


def _pow_block(x: np.ndarray, y: np.ndarray, wide: bool) -> np.ndarray:
    """x**y: exp(y * log|x|) in float64, then the sign and IEEE's cases.

    float16/bfloat16/float32 x: log|x| with the float64 polynomial (relative error ~2**-57), so
    y*log|x| is within ~2**-45 wherever the result is finite in x's type; exp clamped like
    exact_exp's. float64 x: log|x| as a double-length value (see _log_double, relative error near
    2**-70), z = y*log|x| as z_hi + z_lo by Dekker's product (y clamped to +-2**900, where the
    result is 0 or inf anyway), and exp(z_hi) with z_lo added to its reduced argument, so z's error
    stays far below an ulp of the result. A negative x gives NaN for a non-integer y and the
    negated magnitude for an odd y. Zeros, infinities and NaNs of either operand follow C99 Annex F
    (as numpy does): x**0 = 1 and 1**y = 1 even for NaN, (-1)**(+-inf) = 1, 0**negative = inf
    (signed for odd y), and so on.
    """
    a = np.abs(x)
    if wide:
        log_hi, log_lo = _log_double(a)
        y_clamped = _clip(y, -_POW_EXPONENT_LIMIT, _POW_EXPONENT_LIMIT)
        z, z_low = _two_product(y_clamped, log_hi)
        z_low += y_clamped * log_lo
        far = ~(np.abs(z) <= 1000.0)  # 0 or inf: the correction no longer matters
        z[far] = _clip(z[far], -1000.0, 1000.0)
        z_low[far] = 0.0
        magnitude = _exp_block(z, True, z_low)
    else:
        z = _log_block(a, True)
        z *= y
        magnitude = _exp_block(z, False)
    integer = np.floor(y) == y
    half = y * 0.5
    odd = integer & (np.floor(half) != half)
    negative = x < 0.0
    result = np.where(negative & odd, -magnitude, magnitude)
    result[negative & ~integer] = np.nan
    irregular = (a == 0.0) | ~(a < np.inf) | ~(np.abs(y) < np.inf) | (y == 0.0)
    if irregular.any():
        result[irregular] = _pow_special(x[irregular], y[irregular], odd[irregular])
    return result


def _pow_special(x: np.ndarray, y: np.ndarray, odd: np.ndarray) -> np.ndarray:
    """C99 Annex F pow where x or y is zero, infinite or NaN, in rising priority: each later rule
    overrides the earlier ones."""
    a = np.abs(x)
    result = np.full(x.shape, np.nan)
    finite_y = np.abs(y) < np.inf
    # x = +-inf, y finite and non-zero: inf for y > 0, 0 for y < 0, negative for x = -inf and odd y.
    magnitude = np.where(y > 0.0, np.inf, 0.0)
    signed = np.where(odd, np.copysign(magnitude, x), magnitude)
    result = np.where((a == np.inf) & finite_y, signed, result)
    # x = +-0, y finite and non-zero: 0 for y > 0, inf for y < 0, keeping x's sign for odd y.
    magnitude = np.where(y > 0.0, 0.0, np.inf)
    signed = np.where(odd, np.copysign(magnitude, x), magnitude)
    result = np.where((a == 0.0) & finite_y, signed, result)
    # y = +-inf: 1 for |x| = 1; inf when |x| < 1 and y = -inf or |x| > 1 and y = +inf; 0 otherwise.
    grows = (a < 1.0) == (y < 0.0)
    result = np.where(~finite_y & (a == 1.0), 1.0, result)
    result = np.where(~finite_y & (a != 1.0), np.where(grows, np.inf, 0.0), result)
    # NaN in, NaN out, but for the two rules below.
    result = np.where(np.isnan(x) | np.isnan(y), np.nan, result)
    # 1**y = 1 and x**0 = 1 for every y and x, NaN included.
    return np.where((x == 1.0) | (y == 0.0), 1.0, result)


# --- the public kernels ---------------------------------------------------------------------------


def _float32_round_to_odd(y: np.ndarray) -> np.ndarray:
    """float64 y rounded to float32 by round-to-odd: toward zero, then the last bit set where that
    was inexact. Rounding this once more, to nearest even, to a type of at most 22 significant bits
    gives y correctly rounded (Boldo and Melquiond, 2008): that is how bfloat16 results are made,
    since ml_dtypes converts float64 to bfloat16 through float32 (two roundings to nearest)."""
    t = y.astype(np.float32)
    back = t.astype(np.float64)
    away = np.abs(back) > np.abs(y)  # rounded away from zero (overflow to inf included)
    t[away] = np.nextafter(t[away], np.float32(0))
    inexact = (back != y) & ~np.isnan(y)
    t.view(np.uint32)[inexact] |= np.uint32(1)
    return t


def _elementwise(
    block: Callable[..., np.ndarray], x: np.ndarray, *others: np.ndarray, name: str
) -> np.ndarray:
    """Apply block(x64, *others64, wide) to float64 blocks of the broadcast inputs and round each
    block once to x's dtype (wide: x is float64, so the float64 polynomials are used).

    Every NaN result becomes numpy's default NaN: which payload and sign an operation passes on
    differs between numpy's SIMD and scalar code (min, max, abs) and between CPUs."""
    x = np.asarray(x)
    # ml_dtypes' type, known by name: numpy is our only import (dtype.name is slow: asked last)
    bfloat16 = x.dtype not in _FLOAT_TYPES and x.dtype.name == "bfloat16"
    if x.dtype not in _FLOAT_TYPES and not bfloat16:
        raise TypeError(f"{name} takes float16, bfloat16, float32 or float64, not {x.dtype}")
    if not others and x.size <= _BLOCK and not bfloat16:
        # One block (the small arrays of a batch-1 model): the loop's bookkeeping (broadcast,
        # flattening, the output buffer, a mask) costs more than the block's own arithmetic.
        # The same operations on the same values as below, so the same bits.
        with np.errstate(all="ignore"):
            y = block(x.reshape(-1).astype(np.float64, copy=False), x.dtype == np.float64)
            if np.isnan(np.maximum.reduce(y, axis=None, initial=-np.inf)):
                y[np.isnan(y)] = np.nan
            return y.astype(x.dtype, copy=False).reshape(x.shape)
    arrays = np.broadcast_arrays(x, *(np.asarray(o) for o in others))
    flats = [a.reshape(-1) for a in arrays]
    out = np.empty(flats[0].size, dtype=x.dtype)
    wide = x.dtype == np.float64
    with np.errstate(all="ignore"):
        for start in range(0, out.size, _BLOCK):
            chunk = [f[start : start + _BLOCK].astype(np.float64, copy=False) for f in flats]
            y = block(*chunk, wide)
            nan = np.isnan(y)
            if nan.any():
                y[nan] = np.nan
            out[start : start + _BLOCK] = _float32_round_to_odd(y) if bfloat16 else y
    return out.reshape(arrays[0].shape)


def exact_exp(x: np.ndarray) -> np.ndarray:
    """e**x. x = k*ln2/128 + r (Cody-Waite, |r| <= ln2/256), 2**(k/128) from a 128-entry table
    (float64: with its rounding remainder), exp(r) - 1 = r + r**2 * p(r) with a minimax p (degree
    2 for float16/float32, 3 for float64), result s + s*tmp (see _exp_parts for the order). float16
    and float32 arguments are clamped to [-110, 90] (the result rounds to 0 or inf beyond); float64
    arguments beyond +-700 take a power of two out of the scale and put it back with one rounding
    (see _exp_far), so overflow gives inf and subnormal results are rounded once."""
    return _elementwise(_exp_block, x, name="exact_exp")


def exact_expm1(x: np.ndarray) -> np.ndarray:
    """e**x - 1, as exact_exp but finishing with (s - 1) + s*tmp (exact for small x, see
    _expm1_block); arguments below -40 give -1."""
    return _elementwise(_expm1_block, x, name="exact_expm1")


def exact_log(x: np.ndarray) -> np.ndarray:
    """Natural logarithm. x = 2**k * m with m in [sqrt(2)/2, sqrt(2)) by integer arithmetic on the
    bits; log m = 2 atanh(s), s = (m-1)/(m+1), as 2s + s*z*h(z), z = s*s, h a minimax polynomial
    (6 coefficients for float16/float32, 7 for float64); k*ln2 added in two parts (see
    _log_combine for the order). log(0) = -inf, log(negative) = NaN, log(inf) = inf, log(1) = +0."""
    return _elementwise(_log_block, x, name="exact_log")


def exact_log1p(x: np.ndarray) -> np.ndarray:
    """log(1 + x), accurate for small x: exact_log's method applied to u = 1 + x with the exact
    rounding correction (x - (u - 1)) / u added among the small terms."""
    return _elementwise(_log1p_block, x, name="exact_log1p")


def exact_sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e**-x), as 1/(1 + e) for x >= 0 and e/(1 + e) below, e = exp(-|x|), in float64,
    rounded once."""
    return _elementwise(_sigmoid_block, x, name="exact_sigmoid")


def exact_tanh(x: np.ndarray) -> np.ndarray:
    """Hyperbolic tangent: -e / (2 + e) with e = expm1(-2|x|), with x's sign, in float64, rounded
    once."""
    return _elementwise(_tanh_block, x, name="exact_tanh")


def exact_softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + e**x) as max(x, 0) + log1p(exp(-|x|)), in float64, rounded once."""
    return _elementwise(_softplus_block, x, name="exact_softplus")


def exact_sinh(x: np.ndarray) -> np.ndarray:
    """Hyperbolic sine through exact_expm1 (see _sinh_block), in float64, rounded once."""
    return _elementwise(_sinh_block, x, name="exact_sinh")


def exact_cosh(x: np.ndarray) -> np.ndarray:
    """Hyperbolic cosine through exact_exp (see _cosh_block), in float64, rounded once."""
    return _elementwise(_cosh_block, x, name="exact_cosh")


def exact_asinh(x: np.ndarray) -> np.ndarray:
    """Inverse hyperbolic sine through exact_log1p and sqrt (see _asinh_block), in float64,
    rounded once."""
    return _elementwise(_asinh_block, x, name="exact_asinh")


def exact_acosh(x: np.ndarray) -> np.ndarray:
    """Inverse hyperbolic cosine through exact_log1p and sqrt (see _acosh_block), in float64,
    rounded once."""
    return _elementwise(_acosh_block, x, name="exact_acosh")


def exact_atanh(x: np.ndarray) -> np.ndarray:
    """Inverse hyperbolic tangent through exact_log1p (see _atanh_block), in float64, rounded
    once."""
    return _elementwise(_atanh_block, x, name="exact_atanh")


def exact_erf(x: np.ndarray) -> np.ndarray:
    """The error function by piecewise minimax polynomials on intervals of width 1/4 (see
    _erf_block), in float64, rounded once."""
    return _elementwise(_erf_block, x, name="exact_erf")


def exact_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x**y in the base's dtype (x broadcast with y, y of any real dtype; it is converted to
    float64): exp(y * log|x|) in float64 with IEEE's special cases; for a float64 base the
    logarithm and the product are double-length (see _pow_block).

    An integer base (ONNX Pow with a float exponent) is converted to float64 (exact below 2**53,
    correctly rounded above), raised as a float64 base, and the power converted back by
    _to_integer."""
    x = np.asarray(x)
    if x.dtype.kind in "iu":
        return _to_integer(
            _elementwise(_pow_block, x.astype(np.float64), y, name="exact_pow"), x.dtype
        )
    return _elementwise(_pow_block, x, y, name="exact_pow")


def _to_integer(values: np.ndarray, dtype) -> np.ndarray:
    """float64 `values` truncated toward zero to the integer `dtype`, the same on every machine
    (numpy's cast of a float outside the target's range or NaN gives what the CPU gives).

    The truncated value becomes an int64 (exactly: it is an integer below 2**63 in magnitude) and
    wraps to `dtype` (two's complement), as integer Pow wraps; so an integer-valued exponent gives
    integer Pow's result wherever the power is below 2**53. uint64 takes [2**63, 2**64) directly.
    NaN, infinities and other values beyond int64 become -2**63 first (x86's "integer indefinite",
    which numpy's int64 cast gives there) and wrap like the rest."""
    dtype = np.dtype(dtype)
    whole = np.trunc(values)
    bits = np.where(np.abs(whole) < 2.0**63, whole, -(2.0**63)).astype(np.int64)
    if dtype == np.uint64:
        high = (whole >= 2.0**63) & (whole < 2.0**64)
        return np.where(high, np.where(high, whole, 0.0).astype(np.uint64), bits.view(np.uint64))
    return bits.astype(dtype)
