// PCRE2 over 8-bit code units (UTF-8): its functions are then the `_8` ones.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
