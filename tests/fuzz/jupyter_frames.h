/* tests/fuzz/jupyter_frames.h: the input of the fuzz targets that take a
 * Jupyter message's ZeroMQ frames (fuzz_jupyter.c, fuzz_kernel.c). */
#ifndef CX_TESTS_FUZZ_JUPYTER_FRAMES_H
#define CX_TESTS_FUZZ_JUPYTER_FRAMES_H

#include <glib.h>

/* DATA's frames (GBytes), separated by the byte 0xFF, never in UTF-8, so
 * that every JSON frame can be written as it is.  New. */
GPtrArray *fuzz_split_frames(const unsigned char *data, size_t size);
/* Put the signature with KEY after the first delimiter that has four
 * frames behind it, as a peer with the key would, so that fuzzing reaches
 * past the signature check. */
void fuzz_sign_frames(GPtrArray *frames, const char *key);

#endif /* CX_TESTS_FUZZ_JUPYTER_FRAMES_H */
