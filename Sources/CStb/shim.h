#include <stb/stb_image.h>
