/* payretry/buffer.h: pay_buf, the JSON text a call writes for its caller
 * (pay_client_stats, pay_reconcile, pay_ledger_get, pay_ledger_list). */
#ifndef PAYRETRY_BUFFER_H
#define PAYRETRY_BUFFER_H

#include "payretry/common.h"

PAY_BEGIN_DECL

/* A byte buffer the library allocated; release with pay_buf_dispose. */
typedef struct pay_buf {
  char *ptr;    /* NUL-terminated */
  size_t size;  /* excluding the NUL */
} pay_buf;

/* Frees buf->ptr and zeroes the struct. NULL and an empty buf are no-ops. */
PAY_API void pay_buf_dispose(pay_buf *buf);

PAY_END_DECL

#endif /* PAYRETRY_BUFFER_H */
