/** @file float16 / bfloat16 <-> float32 conversions (round to nearest even; NaN stays a quiet NaN) for the collectives' 16-bit float reductions. */
#pragma once

#include <cstdint>
#include <cstring>

namespace jaxts {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/** IEEE binary16 bits -> float32 (exact). */
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  if (exp == 0) return BitsFloat(sign | FloatBits(float(mant) * 5.9604644775390625e-8f));  // mant * 2^-24, exact
  if (exp == 31) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

/** float32 -> IEEE binary16 bits, round to nearest even (overflow to inf, NaN quiet). */
inline uint16_t FloatToHalf(float f) {
  uint32_t x = FloatBits(f);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return uint16_t(sign | (x > 0x7f800000u ? 0x7e00u | ((x >> 13) & 0x3ffu) : 0x7c00u));
  if (x >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 (halfway to 2^16) rounds to inf
  if (x < 0x38800000u) {
    // below 2^-14 (subnormal): adding 0.5f rounds to a multiple of 2^-24 (0.5f's ulp), the subnormal's unit
    return uint16_t(sign | (FloatBits(BitsFloat(x) + 0.5f) - 0x3f000000u));
  }
  // rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even; a carry may reach inf
  x += 0xc8000fffu + ((x >> 13) & 1);
  return uint16_t(sign | (x >> 13));
}

/** bfloat16 bits -> float32 (exact). */
inline float BfloatToFloat(uint16_t b) { return BitsFloat(uint32_t(b) << 16); }

/** float32 -> bfloat16 bits, round to nearest even (NaN quiet). */
inline uint16_t FloatToBfloat(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

}  // namespace jaxts
