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
# Per interval (row): its centre, then the polynomial's coefficients from degree 0 up. One gather
# of whole rows per element costs about a third of thirteen gathers of one value each.
_ERF_TABLE = np.ascontiguousarray(np.stack((_ERF_CENTRES,) + tuple(_ERF_COEFFS), axis=1))


# --- the cores: float64 blocks in, float64 blocks out ---------------------------------------------


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
    x = np.clip(x, -746.0, 710.0)  # beyond: 0 and inf all the same; NaN stays NaN
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
        return _exp_core(np.clip(x, *_NARROW_EXP_RANGE), False)
    y = _exp_core(np.clip(x, -_WIDE_EXP_LIMIT, _WIDE_EXP_LIMIT), True, low)
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
                chunk = np.clip(chunk, -1000.0, -_WIDE_EXP_LIMIT)
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
    s, tmp = _exp_parts(np.clip(x, _EXPM1_FLOOR, high), wide)
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
    row = np.take(_ERF_TABLE, index, axis=0)  # (n, 13): centre, coefficients 0..11
    t = np.minimum(a, _ERF_LAST)
    t -= row[:, 0]
    p = t * row[:, -1]
    for degree in range(_ERF_TABLE.shape[1] - 3, 0, -1):
        p += row[:, 1 + degree]
        p *= t
    p += row[:, 1]
    return np.copysign(p, x, out=p)


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
        y_clamped = np.clip(y, -_POW_EXPONENT_LIMIT, _POW_EXPONENT_LIMIT)
        z, z_low = _two_product(y_clamped, log_hi)
        z_low += y_clamped * log_lo
        far = ~(np.abs(z) <= 1000.0)  # 0 or inf: the correction no longer matters
        z[far] = np.clip(z[far], -1000.0, 1000.0)
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
    bfloat16 = (
        x.dtype.name == "bfloat16"
    )  # ml_dtypes' type, known by name: numpy is our only import
    if x.dtype not in _FLOAT_TYPES and not bfloat16:
        raise TypeError(f"{name} takes float16, bfloat16, float32 or float64, not {x.dtype}")
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
