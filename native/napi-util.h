/** @file Node-API helpers shared by the addon's modules (native/ort-addon.cc, native/devices.cc). */
#pragma once

#include <node_api.h>

#include <cstddef>
#include <string>

namespace jaxts {

/** Reads a JS string into *out; false when `v` is not a string. */
inline bool GetString(napi_env env, napi_value v, std::string* out) {
  size_t len = 0;
  if (napi_get_value_string_utf8(env, v, nullptr, 0, &len) != napi_ok) return false;
  out->resize(len);
  return napi_get_value_string_utf8(env, v, out->data(), len + 1, &len) == napi_ok;
}

/** Points *data / *len at a Uint8Array's bytes; false when `v` is not a Uint8Array. */
inline bool GetUint8Array(napi_env env, napi_value v, void** data, size_t* len) {
  napi_typedarray_type tt;
  size_t off = 0;
  napi_value ab;
  return napi_get_typedarray_info(env, v, &tt, len, data, &ab, &off) == napi_ok && tt == napi_uint8_array;
}

/** Bytes that `len` elements of a typed array of type `tt` span. */
inline size_t TypedArrayBytes(napi_typedarray_type tt, size_t len) {
  // bytes per element by napi_typedarray_type: int8 uint8 uint8c int16 uint16 int32 uint32 f32 f64 i64 u64
  static const size_t kWidth[] = {1, 1, 1, 2, 2, 4, 4, 4, 8, 8, 8};
  return len * (size_t(tt) < sizeof(kWidth) / sizeof(kWidth[0]) ? kWidth[tt] : 1);
}

}  // namespace jaxts
