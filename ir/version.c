/* The library's version, from the header it was built with. */
#include "ir.h"

#define LT_STR2(x) #x
#define LT_STR(x) LT_STR2(x)

const char *lt_version(void)
{
    return LT_STR(LT_VERSION_MAJOR) "." LT_STR(LT_VERSION_MINOR) "." LT_STR(LT_VERSION_PATCH);
}
