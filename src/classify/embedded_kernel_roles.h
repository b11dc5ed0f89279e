// The kernel-roles file data/kernel-roles.yaml, embedded at build time (cmake/EmbedFiles.cmake).
#ifndef TRACEFUSE_SRC_CLASSIFY_EMBEDDED_KERNEL_ROLES_H_
#define TRACEFUSE_SRC_CLASSIFY_EMBEDDED_KERNEL_ROLES_H_

#include <cstddef>

#include "tracefuse/base/embedded_file.h"

namespace tracefuse {

// kEmbeddedKernelRoles holds one file, "kernel-roles".
extern const EmbeddedFile kEmbeddedKernelRoles[];
extern const size_t kEmbeddedKernelRoleCount;

}  // namespace tracefuse

#endif  // TRACEFUSE_SRC_CLASSIFY_EMBEDDED_KERNEL_ROLES_H_
