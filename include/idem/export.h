/* IDEM_API marks what libidem exports: the C++ API (include/idem/) and the C API (idem/c_api.h).
 * libidem is built with hidden visibility (-fvisibility=hidden, -fvisibility-inlines-hidden) and a
 * linker version script, so everything without IDEM_API stays private to the library; protobuf,
 * libonnx and fmt symbols are never exported. C and C++ compatible; no other includes. */
#ifndef IDEM_EXPORT_H_
#define IDEM_EXPORT_H_

#if defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
/* The standard attribute form combines with [[nodiscard]] and alignas on class declarations. */
#define IDEM_API [[gnu::visibility("default")]]
#elif defined(__GNUC__) || defined(__clang__)
#define IDEM_API __attribute__((visibility("default")))
#else
#define IDEM_API
#endif

#endif /* IDEM_EXPORT_H_ */
