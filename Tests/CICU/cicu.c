#include "cicu.h"

#include <unicode/ucol.h>
#include <unicode/uversion.h>

cicu_collator *cicu_open_root(void) {
    UErrorCode status = U_ZERO_ERROR;
    UCollator *collator = ucol_open("", &status);
    if (U_FAILURE(status)) {
        if (collator) ucol_close(collator);
        return NULL;
    }
    return (cicu_collator *)collator;
}

void cicu_close(cicu_collator *collator) { ucol_close((UCollator *)collator); }

int cicu_compare_utf8(const cicu_collator *collator, const char *a, int32_t aLength, const char *b, int32_t bLength) {
    UErrorCode status = U_ZERO_ERROR;
    UCollationResult result = ucol_strcollUTF8((const UCollator *)collator, a, aLength, b, bLength, &status);
    if (U_FAILURE(status)) return 2;
    return (int)result;
}

void cicu_version(char out[20]) {
    UVersionInfo version;
    u_getVersion(version);
    u_versionToString(version, out);
}
