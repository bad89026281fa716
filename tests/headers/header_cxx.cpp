/* The public header must compile as C++ (the same file is built as C99 too) with every warning an error. */
#include <payretry/payretry.h>

int main(void) {
  pay_client_options o = PAY_CLIENT_OPTIONS_INIT;
  pay_submit_options s = PAY_SUBMIT_OPTIONS_INIT;
  (void)o;
  (void)s;
  return PAY_VERSION_NUMBER > 0 ? 0 : 1;
}
