/// \file Scalar semantics of TE operations on the interpreter's value representation (private).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/support/dtype.h"
#include "core/te/expr.h"

namespace souffle::interp {

/// One value: floating types are evaluated in double, integers and bools in int64 (uint64 as its
/// bit pattern). The static dtype of the expression says which member is live.
union Val {
  double f;
  int64_t i;
};

inline int int_bits(DType t) {
  switch (t) {
    case DType::Int8:
    case DType::UInt8:
      return 8;
    case DType::Int16:
    case DType::UInt16:
      return 16;
    case DType::Int32:
    case DType::UInt32:
      return 32;
    case DType::Bool:
      return 1;
    default:
      return 64;
  }
}

/// Two's-complement wrap of a 64-bit pattern to the width of t (bool: != 0).
inline int64_t wrap_int(DType t, uint64_t v) {
  switch (t) {
    case DType::Int8:
      return static_cast<int8_t>(v);
    case DType::Int16:
      return static_cast<int16_t>(v);
    case DType::Int32:
      return static_cast<int32_t>(v);
    case DType::UInt8:
      return static_cast<uint8_t>(v);
    case DType::UInt16:
      return static_cast<uint16_t>(v);
    case DType::UInt32:
      return static_cast<uint32_t>(v);
    case DType::Bool:
      return v != 0;
    default:
      return static_cast<int64_t>(v);
  }
}

/// Round-to-odd narrowing to float, so that a second rounding to a shorter format is correct.
inline float to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 1u) == 0)
    f = std::nextafter(f, static_cast<double>(f) > d ? -std::numeric_limits<float>::infinity()
                                                     : std::numeric_limits<float>::infinity());
  return f;
}

inline uint16_t double_to_half(double d) {
  return float_to_half(to_float_round_odd(d));
}
inline uint16_t double_to_bfloat16(double d) {
  return float_to_bfloat16(to_float_round_odd(d));
}

/// x rounded to the precision of float type t (when `round`).
inline double round_to(DType t, double x, bool round) {
  if (!round) return x;
  switch (t) {
    case DType::Float32:
      return static_cast<float>(x);
    case DType::Float16:
      return half_to_float(double_to_half(x));
    case DType::BFloat16:
      return bfloat16_to_float(double_to_bfloat16(x));
    default:
      return x;
  }
}

/// ONNX-style float -> integer conversion: truncate toward zero; NaN gives 0 and values out of
/// range saturate (C leaves both undefined).
inline int64_t float_to_int(DType to, double x) {
  if (std::isnan(x)) return 0;
  x = std::trunc(x);
  if (to == DType::UInt64) {
    if (x <= 0) return 0;
    if (x >= 18446744073709551616.0) return static_cast<int64_t>(~uint64_t{0});
    return static_cast<int64_t>(static_cast<uint64_t>(x));
  }
  double lo, hi;
  switch (to) {
    case DType::Int8:
      lo = -128, hi = 127;
      break;
    case DType::Int16:
      lo = -32768, hi = 32767;
      break;
    case DType::Int32:
      lo = -2147483648.0, hi = 2147483647.0;
      break;
    case DType::UInt8:
      lo = 0, hi = 255;
      break;
    case DType::UInt16:
      lo = 0, hi = 65535;
      break;
    case DType::UInt32:
      lo = 0, hi = 4294967295.0;
      break;
    default:
      if (x >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
      if (x < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(x);
  }
  return static_cast<int64_t>(std::clamp(x, lo, hi));
}

inline double int_to_double(DType from, int64_t v) {
  return from == DType::UInt64 ? static_cast<double>(static_cast<uint64_t>(v))
                               : static_cast<double>(v);
}

/// Cast semantics (see te::Cast). `round_float`: narrow float results to the target's precision.
inline Val cast_value(DType from, DType to, Val v, bool round_float) {
  Val r;
  if (is_float(from)) {
    if (is_float(to))
      r.f = round_to(to, v.f, round_float);
    else if (to == DType::Bool)
      r.i = v.f != 0.0;
    else
      r.i = float_to_int(to, v.f);
    return r;
  }
  if (is_float(to))
    r.f = round_to(to, int_to_double(from, v.i), round_float);
  else if (to == DType::Bool)
    r.i = v.i != 0;
  else
    r.i = wrap_int(to, static_cast<uint64_t>(v.i));
  return r;
}

inline double round_half_even(double x) {
  double r = std::floor(x);
  double diff = x - r;
  if (diff > 0.5) return r + 1.0;
  if (diff == 0.5) return std::fmod(r, 2.0) != 0.0 ? r + 1.0 : r;
  return r;
}

inline double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a < b ? b : a;
}
inline double nan_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return b < a ? b : a;
}

inline Val binary_f(te::BinaryOp op, double a, double b) {
  using te::BinaryOp;
  Val r;
  switch (op) {
    case BinaryOp::Add:
      r.f = a + b;
      return r;
    case BinaryOp::Sub:
      r.f = a - b;
      return r;
    case BinaryOp::Mul:
      r.f = a * b;
      return r;
    case BinaryOp::Div:
      r.f = a / b;
      return r;
    case BinaryOp::Mod:
      r.f = std::fmod(a, b);
      return r;
    case BinaryOp::FloorDiv:
      r.f = std::floor(a / b);
      return r;
    case BinaryOp::FloorMod: {
      double m = std::fmod(a, b);
      if (m != 0.0 && ((m < 0) != (b < 0))) m += b;
      r.f = m;
      return r;
    }
    case BinaryOp::Min:
      r.f = nan_min(a, b);
      return r;
    case BinaryOp::Max:
      r.f = nan_max(a, b);
      return r;
    case BinaryOp::EQ:
      r.i = a == b;
      return r;
    case BinaryOp::NE:
      r.i = a != b;
      return r;
    case BinaryOp::LT:
      r.i = a < b;
      return r;
    case BinaryOp::LE:
      r.i = a <= b;
      return r;
    case BinaryOp::GT:
      r.i = a > b;
      return r;
    case BinaryOp::GE:
      r.i = a >= b;
      return r;
    case BinaryOp::And:
      r.i = (a != 0.0) && (b != 0.0);
      return r;
    case BinaryOp::Or:
      r.i = (a != 0.0) || (b != 0.0);
      return r;
    case BinaryOp::Xor:
      r.i = (a != 0.0) != (b != 0.0);
      return r;
    default:
      r.f = 0.0;
      return r;  // bitwise ops are not defined on floats (the verifier says so)
  }
}

inline int64_t int_div(DType t, int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (t == DType::UInt64)
    return static_cast<int64_t>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
  if (b == -1) return wrap_int(t, 0 - static_cast<uint64_t>(a));  // MIN / -1 wraps
  return a / b;
}
inline int64_t int_mod(DType t, int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (t == DType::UInt64)
    return static_cast<int64_t>(static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
  if (b == -1) return 0;
  return a % b;
}

/// Integer ops on operands of type t; comparisons and logic give 0/1.
inline int64_t binary_i(te::BinaryOp op, DType t, int64_t a, int64_t b) {
  using te::BinaryOp;
  const bool u64 = t == DType::UInt64;
  const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case BinaryOp::Add:
      return wrap_int(t, ua + ub);
    case BinaryOp::Sub:
      return wrap_int(t, ua - ub);
    case BinaryOp::Mul:
      return wrap_int(t, ua * ub);
    case BinaryOp::Div:
      return int_div(t, a, b);
    case BinaryOp::Mod:
      return int_mod(t, a, b);
    case BinaryOp::FloorDiv: {
      int64_t q = int_div(t, a, b);
      if (!u64 && b != 0 && b != -1 && (a % b != 0) && ((a < 0) != (b < 0))) --q;
      return q;
    }
    case BinaryOp::FloorMod: {
      int64_t m = int_mod(t, a, b);
      if (!u64 && m != 0 && ((m < 0) != (b < 0))) m += b;
      return m;
    }
    case BinaryOp::Min:
      return u64 ? (ub < ua ? b : a) : (b < a ? b : a);
    case BinaryOp::Max:
      return u64 ? (ua < ub ? b : a) : (a < b ? b : a);
    case BinaryOp::EQ:
      return a == b;
    case BinaryOp::NE:
      return a != b;
    case BinaryOp::LT:
      return u64 ? ua < ub : a < b;
    case BinaryOp::LE:
      return u64 ? ua <= ub : a <= b;
    case BinaryOp::GT:
      return u64 ? ua > ub : a > b;
    case BinaryOp::GE:
      return u64 ? ua >= ub : a >= b;
    case BinaryOp::And:
      return (a != 0) && (b != 0);
    case BinaryOp::Or:
      return (a != 0) || (b != 0);
    case BinaryOp::Xor:
      return (a != 0) != (b != 0);
    case BinaryOp::BitAnd:
      return a & b;
    case BinaryOp::BitOr:
      return a | b;
    case BinaryOp::BitXor:
      return wrap_int(t, ua ^ ub);
    case BinaryOp::Shl: {
      int bits = int_bits(t);
      if ((!u64 && b < 0) || ub >= static_cast<uint64_t>(bits)) return 0;
      return wrap_int(t, ua << ub);
    }
    case BinaryOp::Shr: {
      int bits = int_bits(t);
      bool negative = is_signed_int(t) && a < 0;
      if ((!u64 && b < 0) || ub >= static_cast<uint64_t>(bits)) return negative ? -1 : 0;
      if (u64) return static_cast<int64_t>(ua >> ub);
      return a >> b;  // arithmetic for signed types; narrow unsigned values are non-negative
    }
  }
  return 0;
}

inline Val call_f(te::CallFn fn, double x, double y) {
  using te::CallFn;
  Val r;
  switch (fn) {
    case CallFn::Exp:
      r.f = std::exp(x);
      return r;
    case CallFn::Log:
      r.f = std::log(x);
      return r;
    case CallFn::Sqrt:
      r.f = std::sqrt(x);
      return r;
    case CallFn::Rsqrt:
      r.f = 1.0 / std::sqrt(x);
      return r;
    case CallFn::Erf:
      r.f = std::erf(x);
      return r;
    case CallFn::Tanh:
      r.f = std::tanh(x);
      return r;
    case CallFn::Sigmoid:
      r.f = 1.0 / (1.0 + std::exp(-x));
      return r;
    case CallFn::Abs:
      r.f = std::fabs(x);
      return r;
    case CallFn::Floor:
      r.f = std::floor(x);
      return r;
    case CallFn::Ceil:
      r.f = std::ceil(x);
      return r;
    case CallFn::Round:
      r.f = round_half_even(x);
      return r;
    case CallFn::Sign:
      r.f = x > 0 ? 1.0 : (x < 0 ? -1.0 : x);
      return r;
    case CallFn::Sin:
      r.f = std::sin(x);
      return r;
    case CallFn::Cos:
      r.f = std::cos(x);
      return r;
    case CallFn::Tan:
      r.f = std::tan(x);
      return r;
    case CallFn::Asin:
      r.f = std::asin(x);
      return r;
    case CallFn::Acos:
      r.f = std::acos(x);
      return r;
    case CallFn::Atan:
      r.f = std::atan(x);
      return r;
    case CallFn::Sinh:
      r.f = std::sinh(x);
      return r;
    case CallFn::Cosh:
      r.f = std::cosh(x);
      return r;
    case CallFn::Asinh:
      r.f = std::asinh(x);
      return r;
    case CallFn::Acosh:
      r.f = std::acosh(x);
      return r;
    case CallFn::Atanh:
      r.f = std::atanh(x);
      return r;
    case CallFn::IsNaN:
      r.i = std::isnan(x);
      return r;
    case CallFn::IsInf:
      r.i = std::isinf(x);
      return r;
    case CallFn::IsPosInf:
      r.i = std::isinf(x) && x > 0;
      return r;
    case CallFn::IsNegInf:
      r.i = std::isinf(x) && x < 0;
      return r;
    case CallFn::Pow:
      r.f = std::pow(x, y);
      return r;
    case CallFn::Fmod:
      r.f = std::fmod(x, y);
      return r;
  }
  r.f = 0;
  return r;
}

/// Integer power with wrap-around; negative exponents truncate like the real result would.
inline int64_t int_pow(DType t, int64_t base, int64_t e) {
  if (t != DType::UInt64 && e < 0) {
    if (base == 1) return 1;
    if (base == -1) return (e & 1) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1, b = static_cast<uint64_t>(base), n = static_cast<uint64_t>(e);
  while (n != 0) {
    if (n & 1u) result *= b;
    b *= b;
    n >>= 1;
  }
  return wrap_int(t, result);
}

/// Calls on integer arguments of type t; the result has type t (bool for the predicates).
inline Val call_i(te::CallFn fn, DType t, int64_t a, int64_t b) {
  using te::CallFn;
  Val r;
  bool sign = is_signed_int(t);
  switch (fn) {
    case CallFn::Abs:
      r.i = sign && a < 0 ? wrap_int(t, 0 - static_cast<uint64_t>(a)) : a;
      return r;
    case CallFn::Sign:
      r.i = sign ? (a > 0) - (a < 0) : (a != 0);
      return r;
    case CallFn::Floor:
    case CallFn::Ceil:
    case CallFn::Round:
      r.i = a;
      return r;
    case CallFn::IsNaN:
    case CallFn::IsInf:
    case CallFn::IsPosInf:
    case CallFn::IsNegInf:
      r.i = 0;
      return r;
    case CallFn::Pow:
      r.i = int_pow(t, a, b);
      return r;
    case CallFn::Fmod:
      r.i = int_mod(t, a, b);
      return r;
    default: {
      double x = call_f(fn, int_to_double(t, a), int_to_double(t, b)).f;
      r.i = t == DType::Bool ? x != 0.0 : float_to_int(t, x);
      return r;
    }
  }
}

}  // namespace souffle::interp
