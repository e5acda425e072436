// vortex2.h misuse, one case per line: each call must fail with upstream's error code and say why
// on stderr, never crash. Argument: a kernel image (the axpy2 example's).
#include <stdio.h>
#include <string.h>

#include <vortex2.h>

static int ok = 0, total = 0;

static void expect(const char* what, vx_result_t got, vx_result_t want) {
  total++;
  if (got == want) ok++;
  printf("%s: %s%s%s\n", what, vx_result_string(got), got == want ? "" : ", expected ", got == want ? "" : vx_result_string(want));
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  vx_device_h dev;
  if (vx_device_open(0, &dev) != VX_SUCCESS) return 1;
  expect("device 1", vx_device_open(1, &dev), VX_ERR_INVALID_VALUE);
  vx_queue_h q, dead;
  vx_queue_info_t qi = {sizeof qi, NULL, VX_QUEUE_PRIORITY_NORMAL, 0};
  if (vx_queue_create(dev, &qi, &q) != VX_SUCCESS || vx_queue_create(dev, &qi, &dead) != VX_SUCCESS) return 1;
  vx_queue_info_t small = {4, NULL, VX_QUEUE_PRIORITY_NORMAL, 0};
  vx_queue_h q2;
  expect("short queue info", vx_queue_create(dev, &small, &q2), VX_ERR_INVALID_INFO);
  vx_queue_release(dead);
  vx_buffer_h b;
  if (vx_buffer_create(dev, 64, VX_MEM_READ_WRITE, &b) != VX_SUCCESS) return 1;
  char bytes[128] = {0};
  expect("write on a released queue", vx_enqueue_write(dead, b, 0, bytes, 16, 0, NULL, NULL), VX_ERR_INVALID_HANDLE);
  expect("read past the end", vx_enqueue_read(q, bytes, b, 32, 64, 0, NULL, NULL), VX_ERR_INVALID_VALUE);
  vx_event_h user;
  if (vx_event_create(dev, &user) != VX_SUCCESS) return 1;
  expect("wait on an unsignaled event", vx_event_wait_value(user, 1, 1000), VX_ERR_TIMEOUT);
  vx_event_release(user);
  expect("wait on a released event", vx_event_wait_value(user, 1, 1000), VX_ERR_INVALID_HANDLE);
  vx_event_h foreign = (vx_event_h)bytes;
  expect("wait list with a foreign event", vx_enqueue_barrier(q, 1, &foreign, NULL), VX_ERR_INVALID_HANDLE);
  vx_module_h mod;
  expect("a module that is not an image", vx_module_load_bytes(dev, bytes, sizeof bytes, &mod), VX_ERR_INVALID_VALUE);
  if (vx_module_load_file(dev, argv[1], &mod) != VX_SUCCESS) return 1;
  vx_kernel_h k;
  expect("a kernel that is not there", vx_module_get_kernel(mod, "no_such_kernel", &k), VX_ERR_INVALID_VALUE);
  vx_launch_info_t li;
  memset(&li, 0, sizeof li);
  li.struct_size = 8;
  expect("short launch info", vx_enqueue_launch(q, &li, 0, NULL, NULL), VX_ERR_INVALID_INFO);
  expect("fill with a pattern that does not divide", vx_enqueue_fill_buffer(q, b, 0, 10, bytes, 4, 0, NULL, NULL),
         VX_ERR_INVALID_VALUE);
  vx_kernel_h scale;
  if (vx_module_get_kernel(mod, "scale", &scale) != VX_SUCCESS) return 1;
  vx_launch_info_t clustered = {sizeof clustered, NULL, scale, NULL, 0, 1, {6, 1, 1}, {16, 1, 1}, 0, {4, 1, 1}};
  expect("a grid that is not a whole number of clusters", vx_enqueue_launch(q, &clustered, 0, NULL, NULL),
         VX_ERR_INVALID_VALUE);
  vx_kernel_release(scale);
  vx_command_t bad = {(vx_command_type_e)7, {NULL}};
  expect("a batch with an unknown command", vx_enqueue_commands(q, &bad, 1, 0, NULL, NULL), VX_ERR_INVALID_VALUE);
  uint64_t counter = 0;
  expect("a performance counter the model lacks", vx_device_mpm_query(dev, 1, 0xB03, 0, &counter),
         VX_ERR_NOT_SUPPORTED);
  printf("%d of %d misuses refused with upstream's codes\n", ok, total);
  vx_module_release(mod);
  vx_buffer_release(b);
  vx_queue_release(q);
  vx_device_release(dev);
  return ok == total ? 0 : 1;
}
