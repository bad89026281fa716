// version.h: the version of the library actually loaded.
#include "payretry/payretry.h"

extern "C" {

const char* pay_version(void) { return PAY_VERSION; }
int pay_version_number(void) { return PAY_VERSION_NUMBER; }

}  // extern "C"
