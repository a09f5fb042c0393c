#include <sqlite3.h>

/// Turns off SQLite's memory statistics, which take a global mutex on every
/// allocation. Only works before SQLite is first used in the process.
static inline int csqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
