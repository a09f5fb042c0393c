// Duktape 2.7 (Debian's duktape-dev): the JavaScript engine design documents run on.
#include <duktape.h>
