// queues: upstream's asynchronous API (vortex2.h). One module with two kernels; a queue with two
// launches enqueued back to back (scale: y = a x, then accumulate: z += y) and a read of y between
// them; events with their values and profiling; then a batch of commands (vx_enqueue_commands) that
// accumulates once more. Checks z[i] == 1 + a i, then 1 + 2 a i. -n N elements (default 100).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <vortex2.h>

#define CHECK2(call)                                                                                   \
  do {                                                                                                 \
    vx_result_t r_ = (call);                                                                           \
    if (r_ != VX_SUCCESS) {                                                                            \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, vx_result_string(r_)); \
      exit(1);                                                                                         \
    }                                                                                                  \
  } while (0)

struct axpy2_args {
  uint32_t n;
  float a;
  uint64_t x, y, z;
};

int main(int argc, char** argv) {
  uint32_t n = 100;
  const char* kernel = VX_EXAMPLE_KERNEL_DIR "/axpy2_kernel.elf";
  int c;
  while ((c = getopt(argc, argv, "k:n:")) != -1) {
    if (c == 'k') kernel = optarg;
    else if (c == 'n') n = (uint32_t)strtoul(optarg, NULL, 0);
    else return 2;
  }
  vx_device_h dev;
  vx_queue_h q;
  vx_module_h mod;
  vx_kernel_h scale, accumulate;
  vx_buffer_h bx, by, bz;
  CHECK2(vx_device_open(0, &dev));
  vx_queue_info_t qi = {sizeof qi, NULL, VX_QUEUE_PRIORITY_NORMAL, VX_QUEUE_PROFILING_ENABLE};
  CHECK2(vx_queue_create(dev, &qi, &q));
  CHECK2(vx_module_load_file(dev, kernel, &mod));
  CHECK2(vx_module_get_kernel(mod, "scale", &scale));
  CHECK2(vx_module_get_kernel(mod, "accumulate", &accumulate));

  float* x = malloc(n * sizeof(float));
  float* y = malloc(n * sizeof(float));
  float* z = malloc(n * sizeof(float));
  for (uint32_t i = 0; i < n; i++) {
    x[i] = (float)i;
    z[i] = 1.0f;
  }
  CHECK2(vx_buffer_create(dev, n * sizeof(float), VX_MEM_READ, &bx));
  CHECK2(vx_buffer_create(dev, n * sizeof(float), VX_MEM_READ_WRITE, &by));
  CHECK2(vx_buffer_create(dev, n * sizeof(float), VX_MEM_READ_WRITE, &bz));
  struct axpy2_args args = {n, 3.0f, 0, 0, 0};
  CHECK2(vx_buffer_address(bx, &args.x));
  CHECK2(vx_buffer_address(by, &args.y));
  CHECK2(vx_buffer_address(bz, &args.z));

  vx_event_h wrote, first, read, second;
  CHECK2(vx_enqueue_write(q, bx, 0, x, n * sizeof(float), 0, NULL, NULL));
  CHECK2(vx_enqueue_write(q, bz, 0, z, n * sizeof(float), 0, NULL, &wrote));
  uint32_t block = 16, grid = (n + block - 1) / block;
  vx_launch_info_t li = {sizeof li, NULL, scale, &args, sizeof args, 1, {grid, 1, 1}, {block, 1, 1}, 0, {1, 1, 1}};
  CHECK2(vx_enqueue_launch(q, &li, 1, &wrote, &first));
  CHECK2(vx_enqueue_read(q, y, by, 0, n * sizeof(float), 1, &first, &read));
  li.kernel = accumulate;
  CHECK2(vx_enqueue_launch(q, &li, 1, &first, &second));
  CHECK2(vx_event_wait_value(second, 1, VX_TIMEOUT_INFINITE));
  CHECK2(vx_enqueue_read(q, z, bz, 0, n * sizeof(float), 1, &second, NULL));
  CHECK2(vx_queue_finish(q, VX_TIMEOUT_INFINITE));

  uint64_t value = 0;
  CHECK2(vx_event_get_value(read, &value));
  vx_profile_info_t prof;
  CHECK2(vx_event_get_profiling(second, &prof));
  uint32_t errors = 0;
  for (uint32_t i = 0; i < n; i++)
    if (y[i] != 3.0f * (float)i || z[i] != 1.0f + 3.0f * (float)i) {
      if (errors < 5) printf("i = %u: y = %g, z = %g\n", i, y[i], z[i]);
      errors++;
    }

  // A batch (one event for all of it): a DCR write, then accumulate once more: z = 1 + 6 i.
  vx_command_t batch[2];
  batch[0].type = VX_COMMAND_DCR_WRITE;
  batch[0].data.dcr.addr = 0x01C;  // the KMU's local-memory size (VX_DCR_KMU_LMEM_SIZE in vortex.h)
  batch[0].data.dcr.value = 0;
  batch[1].type = VX_COMMAND_LAUNCH;
  batch[1].data.launch = &li;
  vx_event_h batched;
  CHECK2(vx_enqueue_commands(q, batch, 2, 0, NULL, &batched));
  CHECK2(vx_enqueue_read(q, z, bz, 0, n * sizeof(float), 1, &batched, NULL));
  CHECK2(vx_queue_finish(q, VX_TIMEOUT_INFINITE));
  for (uint32_t i = 0; i < n; i++)
    if (z[i] != 1.0f + 6.0f * (float)i) {
      if (errors < 5) printf("after the batch, i = %u: z = %g\n", i, z[i]);
      errors++;
    }
  printf("queues: read event value %llu, second launch profiled: %s\n", (unsigned long long)value,
         prof.end_ns >= prof.start_ns ? "yes" : "no");
  printf("queues: %s\n", errors ? "FAILED" : "PASSED");
  vx_event_release(wrote);
  vx_event_release(first);
  vx_event_release(read);
  vx_event_release(second);
  vx_event_release(batched);
  vx_kernel_release(scale);
  vx_kernel_release(accumulate);
  vx_module_release(mod);
  vx_buffer_release(bx);
  vx_buffer_release(by);
  vx_buffer_release(bz);
  vx_queue_release(q);
  vx_device_release(dev);
  free(x);
  free(y);
  free(z);
  return errors ? 1 : 0;
}
