// ICU's root-locale collator, the one CouchDB compares view keys with, as the
// tests' oracle for Store's own collation. Test-only: syncd does not link ICU.
//
// No ICU header is seen from Swift: Foundation brings a copy of ICU's headers
// of its own (_FoundationICU) whose types would clash with Debian's. So this
// header names none of ICU's types, and cicu.c, which includes
// <unicode/ucol.h>, also gets its renaming macros: Debian's libicu versions
// its symbols (ucol_open_72).
#ifndef CICU_H
#define CICU_H

#include <stdint.h>

/// A collator (ICU's UCollator).
typedef struct cicu_collator cicu_collator;

/// The root-locale (CLDR root, UCA) collator with its default attributes, as
/// CouchDB's couch_ejson_compare opens it; NULL if ICU could not open it.
cicu_collator *cicu_open_root(void);

void cicu_close(cicu_collator *collator);

/// Compares two UTF-8 strings (of the given lengths, NULs included): -1, 0 or
/// 1; 2 if ICU reported an error.
int cicu_compare_utf8(const cicu_collator *collator, const char *a, int32_t aLength, const char *b, int32_t bLength);

/// ICU's version, such as "72.1", into `out` (20 bytes).
void cicu_version(char out[20]);

#endif
