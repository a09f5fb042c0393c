#include <zlib.h>

/// inflateInit2 is a macro; this is it as a function Swift can call.
static inline int czlib_inflate_init_gzip(z_streamp stream) {
    return inflateInit2(stream, 15 + 16);
}
