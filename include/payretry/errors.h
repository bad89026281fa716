/* payretry/errors.h: error codes of failed *calls*.
 *
 * A declined or undetermined payment is not an error: it is data on the result
 * (see result.h). An error code means the call itself could not do its job
 * (bad argument, bad config, ledger I/O, a caller bug such as reusing a key
 * with another body).
 */
#ifndef PAYRETRY_ERRORS_H
#define PAYRETRY_ERRORS_H

#include "payretry/common.h"

PAY_BEGIN_DECL

/* The one table of codes and their messages. Append only: a code is never
 * renumbered or removed, because bindings and stored logs carry the numbers. */
#define PAY_ERROR_MAP(XX)                                                              \
  XX(PAY_OK,        0,  "success")                                                     \
  XX(PAY_ERROR,    -1,  "unexpected internal error")                                   \
  XX(PAY_EINVALID, -2,  "invalid argument")                                            \
  XX(PAY_ENOMEM,   -3,  "out of memory")                                               \
  XX(PAY_ECONFIG,  -4,  "invalid configuration")                                       \
  XX(PAY_EMISMATCH, -5, "idempotency key or order reused with different parameters")   \
  XX(PAY_ETOOBIG,  -6,  "request body too large")                                      \
  XX(PAY_EKEY,     -7,  "invalid idempotency key")                                     \
  XX(PAY_EVERSION, -8,  "unsupported options struct version")                          \
  XX(PAY_EHOOK,    -9,  "request hook failed before anything was sent")                \
  XX(PAY_EIO,      -10, "I/O error")                                                  \
  XX(PAY_ELEDGER,  -11, "ledger failure (locked, read-only, full, corrupt or unreachable)") \
  XX(PAY_ENOTFOUND, -12, "no such payment in the ledger")                              \
  XX(PAY_EAGAIN,   -13, "not finished yet: wait again")

typedef enum pay_error_code {
#define PAY_ERROR_ENUM_(name, value, text) name = value,
  PAY_ERROR_MAP(PAY_ERROR_ENUM_)
#undef PAY_ERROR_ENUM_
  PAY_ERROR_CODE_LAST_ = -13
} pay_error_code;

/* The detail of the last failed call on this thread. */
typedef struct pay_error {
  int code;            /* a pay_error_code; PAY_OK when nothing failed yet */
  const char *message; /* never NULL; secrets are never included */
} pay_error;

/* Returns the detail of the most recent failed call made on the calling
 * thread. Never NULL. The pointer and its message stay valid until the next
 * payretry call on this thread. Thread-safe (the state is per thread). */
PAY_API const pay_error *pay_error_last(void);

/* Resets the calling thread's last error to PAY_OK. Thread-safe. */
PAY_API void pay_error_clear(void);

/* Returns a static, never-NULL description of `code` ("unknown error code"
 * for numbers not in PAY_ERROR_MAP). Thread-safe. */
PAY_API const char *pay_strerror(int code);

PAY_END_DECL

#endif /* PAYRETRY_ERRORS_H */
