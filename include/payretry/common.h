/* payretry/common.h: export macro and C linkage guards shared by every header. */
#ifndef PAYRETRY_COMMON_H
#define PAYRETRY_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && !defined(PAY_STATIC)
#  if defined(PAY_BUILDING)
#    define PAY_API __declspec(dllexport)
#  else
#    define PAY_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define PAY_API __attribute__((visibility("default")))
#else
#  define PAY_API
#endif

#ifdef __cplusplus
#  define PAY_BEGIN_DECL extern "C" {
#  define PAY_END_DECL }
#else
#  define PAY_BEGIN_DECL
#  define PAY_END_DECL
#endif

#endif /* PAYRETRY_COMMON_H */
