/*
 * libudev with no udev: the five functions Debian's static libhwloc (libhwloc.a) calls,
 * for numalab's self-contained binaries (scripts/static/env.sh, scripts/dist.sh).
 *
 * Debian has no static libudev, and a single-file binary must not need libudev.so.1 on
 * the server. hwloc asks udev only for the names and serial numbers of block devices
 * (OS-device info attributes), and only when udev_new() gives it a context; udev_new()
 * also fails on real systems (containers without /run/udev), so hwloc already lives
 * without one: a NULL context makes it skip those attributes. numalab reads no block
 * device attributes. The other four are never reached without a context; they return
 * NULL, as libudev does for a NULL argument.
 */
#include <stddef.h>

struct udev;
struct udev_device;

struct udev *udev_new(void) { return NULL; }

struct udev *udev_unref(struct udev *udev) { (void)udev; return NULL; }

struct udev_device *udev_device_new_from_subsystem_sysname(struct udev *udev,
                                                            const char *subsystem,
                                                            const char *sysname) {
  (void)udev; (void)subsystem; (void)sysname;
  return NULL;
}

const char *udev_device_get_property_value(struct udev_device *device, const char *key) {
  (void)device; (void)key;
  return NULL;
}

struct udev_device *udev_device_unref(struct udev_device *device) { (void)device; return NULL; }
