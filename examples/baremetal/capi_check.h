/* capi_check.c: the C API from C on the board. */
#ifndef HEADWAY_EXAMPLES_BAREMETAL_CAPI_CHECK_H_
#define HEADWAY_EXAMPLES_BAREMETAL_CAPI_CHECK_H_

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the C API's attention matched the reference (its largest error in *max_error) and its
 * KV cache matched attend; 0 with *message saying what failed. */
int capi_check(double* max_error, const char** message);

#ifdef __cplusplus
}
#endif

#endif
