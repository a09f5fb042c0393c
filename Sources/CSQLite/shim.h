#include <sqlite3.h>

/// Turns off SQLite's memory statistics, which take a global mutex on every
/// allocation. Only works before SQLite is first used in the process.
static inline int csqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

#include <malloc.h>

/// Hands the memory SQLite freed (sqlite3_db_release_memory) back to the
/// system: glibc's malloc keeps freed pages for reuse otherwise.
static inline void csqlite_return_freed_memory(void) {
    malloc_trim(0);
}
