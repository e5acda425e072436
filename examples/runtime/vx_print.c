// Console output through the per-hart rings. The formatter branches on
// per-lane data, so every public entry point runs it lane by lane through
// vx_serial; everything below the entry points assumes one active lane.
#include "vx_print.h"

#include <stdarg.h>
#include <stdint.h>

#include "vx_intrinsics.h"
#include "vx_runtime.h"

#define CONSOLE_WR_IDX 0x40u
#define CONSOLE_RD_IDX 0x140u
#define CONSOLE_DATA 0x240u
#define CONSOLE_LOST 0x8240u
#define CONSOLE_SLOTS 64u
#define CONSOLE_RING_BYTES 512u

// Stores the byte when the ring has room, otherwise counts it as lost. The
// data byte is stored before the write index moves so the host never reads
// a slot that is not filled yet.
static void ring_put(char c) {
  uint32_t slot = vx_hart_id() & (CONSOLE_SLOTS - 1);
  volatile uint32_t* wr = (volatile uint32_t*)(uintptr_t)CONSOLE_WR_IDX + slot;
  volatile uint32_t* rd = (volatile uint32_t*)(uintptr_t)CONSOLE_RD_IDX + slot;
  uint32_t w = *wr;
  if (w - *rd < CONSOLE_RING_BYTES) {
    volatile uint8_t* data = (volatile uint8_t*)(uintptr_t)CONSOLE_DATA + slot * CONSOLE_RING_BYTES;
    data[w & (CONSOLE_RING_BYTES - 1)] = (uint8_t)c;
    *wr = w + 1;
  } else {
    __atomic_fetch_add((volatile uint32_t*)(uintptr_t)CONSOLE_LOST + slot, 1u, __ATOMIC_RELAXED);
  }
}

// With more than 64 harts several share a ring, and their read-modify-write
// of the write index would interleave (overwritten bytes, a write index
// behind the host's read index). Each lane therefore holds its ring's lock
// for a whole call, which also keeps a printf's text contiguous in the ring.
static volatile uint32_t ring_lock[CONSOLE_SLOTS];

static void ring_acquire(void) {
  volatile uint32_t* l = &ring_lock[vx_hart_id() & (CONSOLE_SLOTS - 1)];
  while (__atomic_exchange_n(l, 1u, __ATOMIC_ACQUIRE)) {
  }
}

static void ring_release(void) {
  __atomic_store_n(&ring_lock[vx_hart_id() & (CONSOLE_SLOTS - 1)], 0u, __ATOMIC_RELEASE);
}

struct sink {
  int count;
};

static void emit(struct sink* s, char c) {
  ring_put(c);
  s->count++;
}

static void emit_n(struct sink* s, char c, int n) {
  for (int i = 0; i < n; i++) emit(s, c);
}

struct spec {
  int left;   // '-': pad on the right
  int zero;   // '0': pad numbers with zeros after the sign
  int width;
  int prec;   // -1 = not given
};

// Emits sign, then body, padded to the field width.
static void emit_field(struct sink* s, const struct spec* sp, const char* sign, const char* body, int body_len) {
  int sign_len = 0;
  while (sign[sign_len]) sign_len++;
  int pad = sp->width - sign_len - body_len;
  if (pad < 0) pad = 0;
  if (!sp->left && !sp->zero) emit_n(s, ' ', pad);
  for (int i = 0; i < sign_len; i++) emit(s, sign[i]);
  if (!sp->left && sp->zero) emit_n(s, '0', pad);
  for (int i = 0; i < body_len; i++) emit(s, body[i]);
  if (sp->left) emit_n(s, ' ', pad);
}

static const char kDigitsLower[] = "0123456789abcdef";
static const char kDigitsUpper[] = "0123456789ABCDEF";

// Writes v in the given base right-aligned ending at end; returns the first char.
static char* u32_to_text(uint32_t v, uint32_t base, const char* digits, char* end) {
  char* p = end;
  do {
    *--p = digits[v % base];
    v /= base;
  } while (v);
  return p;
}

// n / 10 for 64-bit n without a division helper: RV32 has no 64-bit divide
// and the runtime links no compiler support library. Shift-add estimate of
// n * 0.8, then exact correction on the remainder.
static uint64_t u64_div10(uint64_t n, uint32_t* rem) {
  uint64_t q = (n >> 1) + (n >> 2);
  q += q >> 4;
  q += q >> 8;
  q += q >> 16;
  q += q >> 32;
  q >>= 3;
  // The estimate is low by a small amount, so the remainder fits 32 bits and
  // the correction needs only a 32-bit divide.
  uint32_t r = (uint32_t)(n - q * 10);
  *rem = r % 10u;
  return q + r / 10u;
}

static char* u64_to_decimal(uint64_t v, char* end) {
  char* p = end;
  do {
    uint32_t d;
    v = u64_div10(v, &d);
    *--p = (char)('0' + d);
  } while (v);
  return p;
}

#define FRAC_BITS 60
#define FRAC_ONE ((uint64_t)1 << FRAC_BITS)
#define MAX_FLOAT_PREC 20

// Exact hexadecimal form for magnitudes too large for the fixed notation.
static void emit_hex_float(struct sink* s, const struct spec* sp, const char* sign, uint64_t mant, int exp2) {
  char buf[40];
  char* end = buf + sizeof buf;
  char* p = end;
  int e = exp2 < 0 ? -exp2 : exp2;
  p = u32_to_text((uint32_t)e, 10, kDigitsLower, p);
  *--p = exp2 < 0 ? '-' : '+';
  *--p = 'p';
  for (int i = 0; i < 13; i++) {
    *--p = kDigitsLower[mant & 15];
    mant >>= 4;
  }
  *--p = '.';
  *--p = '1';
  *--p = 'x';
  *--p = '0';
  emit_field(s, sp, sign, p, (int)(end - p));
}

// %f from the raw bits of a double (varargs promote float to double; the
// bits are decoded with integer arithmetic since RV32IMAF has no double FPU).
static void emit_double(struct sink* s, const struct spec* sp, uint64_t bits) {
  const char* sign = (bits >> 63) ? "-" : "";
  uint32_t exp = (uint32_t)(bits >> 52) & 0x7ff;
  uint64_t mant = bits & ((((uint64_t)1) << 52) - 1);
  struct spec plain = *sp;
  plain.zero = 0;
  if (exp == 0x7ff) {
    emit_field(s, &plain, sign, mant ? "nan" : "inf", 3);
    return;
  }
  int e2;
  if (exp == 0) {
    e2 = -1074;
  } else {
    mant |= ((uint64_t)1) << 52;
    e2 = (int)exp - 1075;
  }
  if (e2 > 11) {
    emit_hex_float(s, &plain, sign, mant, (int)exp - 1023);
    return;
  }
  uint64_t ip, frac;  // integer part and fraction as FRAC_BITS fixed point
  if (e2 >= 0) {
    ip = mant << e2;
    frac = 0;
  } else {
    int sh = -e2;
    uint64_t low = sh >= 64 ? mant : mant & ((((uint64_t)1) << sh) - 1);
    ip = sh >= 64 ? 0 : mant >> sh;
    if (sh <= FRAC_BITS)
      frac = low << (FRAC_BITS - sh);
    else
      frac = sh - FRAC_BITS >= 64 ? 0 : low >> (sh - FRAC_BITS);
  }
  int prec = sp->prec < 0 ? 6 : sp->prec;
  if (prec > MAX_FLOAT_PREC) prec = MAX_FLOAT_PREC;
  char fd[MAX_FLOAT_PREC];
  for (int i = 0; i < prec; i++) {
    frac *= 10;
    fd[i] = (char)('0' + (frac >> FRAC_BITS));
    frac &= FRAC_ONE - 1;
  }
  // Round to nearest, ties to even (what a C library does in the default
  // rounding mode); an exact tie can only come from an exact binary value.
  const int last_odd = prec > 0 ? (fd[prec - 1] - '0') & 1 : (int)(ip & 1);
  if (frac > FRAC_ONE / 2 || (frac == FRAC_ONE / 2 && last_odd)) {
    int i = prec - 1;
    while (i >= 0 && fd[i] == '9') fd[i--] = '0';
    if (i >= 0)
      fd[i]++;
    else
      ip++;
  }
  char buf[24 + 1 + MAX_FLOAT_PREC];
  char* int_end = buf + 24;
  char* p = u64_to_decimal(ip, int_end);
  int len = (int)(int_end - p);
  if (prec > 0) {
    p[len++] = '.';
    for (int i = 0; i < prec; i++) p[len++] = fd[i];
  }
  emit_field(s, sp, sign, p, len);
}

static int format(const char* fmt, va_list ap) {
  struct sink s = {0};
  for (; *fmt; fmt++) {
    if (*fmt != '%') {
      emit(&s, *fmt);
      continue;
    }
    fmt++;
    struct spec sp = {0, 0, 0, -1};
    for (;; fmt++) {
      if (*fmt == '-')
        sp.left = 1;
      else if (*fmt == '0')
        sp.zero = 1;
      else
        break;
    }
    if (*fmt == '*') {
      sp.width = va_arg(ap, int);
      if (sp.width < 0) {
        sp.left = 1;
        sp.width = -sp.width;
      }
      fmt++;
    } else {
      while (*fmt >= '0' && *fmt <= '9') sp.width = sp.width * 10 + (*fmt++ - '0');
    }
    if (*fmt == '.') {
      fmt++;
      sp.prec = 0;
      if (*fmt == '*') {
        sp.prec = va_arg(ap, int);
        fmt++;
      } else {
        while (*fmt >= '0' && *fmt <= '9') sp.prec = sp.prec * 10 + (*fmt++ - '0');
      }
    }
    if (sp.left) sp.zero = 0;
    while (*fmt == 'l' || *fmt == 'h' || *fmt == 'z') fmt++;
    char buf[12];
    char* end = buf + sizeof buf;
    char* p;
    switch (*fmt) {
      case 'd':
      case 'i': {
        int32_t v = va_arg(ap, int32_t);
        uint32_t mag = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
        p = u32_to_text(mag, 10, kDigitsLower, end);
        emit_field(&s, &sp, v < 0 ? "-" : "", p, (int)(end - p));
        break;
      }
      case 'u':
        p = u32_to_text(va_arg(ap, uint32_t), 10, kDigitsLower, end);
        emit_field(&s, &sp, "", p, (int)(end - p));
        break;
      case 'x':
      case 'X':
        p = u32_to_text(va_arg(ap, uint32_t), 16, *fmt == 'x' ? kDigitsLower : kDigitsUpper, end);
        emit_field(&s, &sp, "", p, (int)(end - p));
        break;
      case 'p': {
        uint32_t v = (uint32_t)(uintptr_t)va_arg(ap, void*);
        p = end;
        for (int i = 0; i < 8; i++, v >>= 4) *--p = kDigitsLower[v & 15];
        sp.zero = 0;
        emit_field(&s, &sp, "0x", p, 8);
        break;
      }
      case 'c': {
        char c = (char)va_arg(ap, int);
        sp.zero = 0;
        emit_field(&s, &sp, "", &c, 1);
        break;
      }
      case 's': {
        const char* str = va_arg(ap, const char*);
        if (!str) str = "(null)";
        int len = 0;
        while (str[len] && (sp.prec < 0 || len < sp.prec)) len++;
        sp.zero = 0;
        emit_field(&s, &sp, "", str, len);
        break;
      }
      case 'f':
      case 'F': {
        union {
          double d;
          uint64_t u;
        } v;
        v.d = va_arg(ap, double);
        emit_double(&s, &sp, v.u);
        break;
      }
      case '%':
        emit(&s, '%');
        break;
      case '\0':
        return s.count;
      default:  // unknown conversion: show it rather than guess its argument
        emit(&s, '%');
        emit(&s, *fmt);
        break;
    }
  }
  return s.count;
}

struct printf_job {
  const char* fmt;
  va_list* ap;
  int count;
};

static void printf_lane(void* arg, int lane) {
  (void)lane;
  struct printf_job* job = arg;
  va_list ap;
  va_copy(ap, *job->ap);
  ring_acquire();
  job->count = format(job->fmt, ap);
  ring_release();
  va_end(ap);
}

int vx_printf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  struct printf_job job = {fmt, &ap, 0};
  vx_serial(printf_lane, &job);
  va_end(ap);
  return job.count;
}

static void putchar_lane(void* arg, int lane) {
  (void)lane;
  ring_acquire();
  ring_put(*(const char*)arg);
  ring_release();
}

void vx_putchar(int c) {
  char ch = (char)c;
  vx_serial(putchar_lane, &ch);
}

static void puts_lane(void* arg, int lane) {
  (void)lane;
  ring_acquire();
  for (const char* s = arg; *s; s++) ring_put(*s);
  ring_put('\n');
  ring_release();
}

void vx_puts(const char* s) { vx_serial(puts_lane, (void*)s); }
