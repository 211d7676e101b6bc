/* The storage layer's append path and record batch validation, in C.
 *
 * Every request a broker appends (produce on the leader, fetch on a follower) goes through
 * SegmentAppender (the base class of LogSegment): header checks, CRC-32C (the SSE 4.2
 * instruction; the crc32c package on other CPUs), stamping base offsets and the leader
 * epoch, Kafka's roll rules, the pwrite and the sparse index, in one call per request. Done
 * in Python, this cost more than the page-cache write it guards (issue 2: append >= 0.8 x
 * raw os.write). header_fields serves every other reader of batches (recovery, tools,
 * consumers). The rules are those of record_batch.py's docstring; the Python side turns
 * BatchScanError into the storage layer's exceptions.
 *
 * BatchScanError's args are (kind, position, detail): kind is an InvalidBatchReason name,
 * "MESSAGE_TOO_LARGE" (batch over max.message.bytes), "OUT_OF_SEQUENCE" (a follower's
 * batches not contiguous, or its leader epochs going backwards), "EMPTY" (a request without
 * a batch), "RECORD_LIST_TOO_LARGE" (a request over segment.bytes) or "INVALID_RECORD"
 * (a leader's batch whose records are not what its header promises: _records_walk.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdarg.h>
#include <stdint.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <structmember.h>

#include "_records_walk.h"

#define HEADER_SIZE 61
#define LOG_OVERHEAD 12
#define MAGIC 2

static PyObject *crc32c_fn;      /* crc32c.crc32c */
/* LogAppendInfo, the NamedTuple of segment.py, registered by set_append_info_type: its
 * instances are made here as tuples of that type (a NamedTuple adds no fields to a tuple). */
static PyTypeObject *LogAppendInfoType;
#define APPEND_INFO_FIELDS 7

static PyObject *new_append_info(long long first, long long last, long long max_ts,
                                 Py_ssize_t num_batches, long long num_records,
                                 Py_ssize_t valid_bytes, PyObject *new_epochs) {
    if (LogAppendInfoType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "set_append_info_type was not called");
        return NULL;
    }
    PyObject *info = LogAppendInfoType->tp_alloc(LogAppendInfoType, APPEND_INFO_FIELDS);
    if (info == NULL) return NULL;
    PyObject *v[APPEND_INFO_FIELDS] = {
        PyLong_FromLongLong(first),       PyLong_FromLongLong(last),
        PyLong_FromLongLong(max_ts),      PyLong_FromSsize_t(num_batches),
        PyLong_FromLongLong(num_records), PyLong_FromSsize_t(valid_bytes),
        Py_NewRef(new_epochs ? new_epochs : Py_None)};
    int failed = 0;
    for (int i = 0; i < APPEND_INFO_FIELDS; i++) {
        if (v[i] == NULL) failed = 1;
        PyTuple_SET_ITEM(info, i, v[i]); /* NULL items are fine for the dealloc */
    }
    if (failed) {
        Py_DECREF(info);
        return NULL;
    }
    return info;
}

PyDoc_STRVAR(set_append_info_type_doc,
             "set_append_info_type(cls)\n\nThe tuple subclass (a NamedTuple of 7 fields) that\n"
             "append_leader and append_follower return.");

static PyObject *set_append_info_type(PyObject *self, PyObject *cls) {
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type) ||
        ((PyTypeObject *)cls)->tp_basicsize != PyTuple_Type.tp_basicsize ||
        ((PyTypeObject *)cls)->tp_itemsize != PyTuple_Type.tp_itemsize) {
        PyErr_SetString(PyExc_TypeError, "expected a NamedTuple class");
        return NULL;
    }
    Py_INCREF(cls);
    Py_XSETREF(LogAppendInfoType, (PyTypeObject *)cls);
    Py_RETURN_NONE;
}

static PyObject *BatchScanError; /* minikafka.storage._batch_scan.BatchScanError */

typedef struct {
    int64_t base_offset;
    int32_t batch_length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t first_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t record_count;
} header_t;

static inline uint64_t be64(const uint8_t *p) {
    return ((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) | ((uint64_t)p[2] << 40) |
           ((uint64_t)p[3] << 32) | ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) |
           ((uint64_t)p[6] << 8) | (uint64_t)p[7];
}

static inline uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
           (uint32_t)p[3];
}

static inline uint16_t be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static inline void put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static inline void put_be32(uint8_t *p, uint32_t v) {
    for (int i = 3; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static void parse_header(const uint8_t *p, header_t *h) {
    h->base_offset = (int64_t)be64(p);
    h->batch_length = (int32_t)be32(p + 8);
    h->partition_leader_epoch = (int32_t)be32(p + 12);
    h->magic = (int8_t)p[16];
    h->crc = be32(p + 17);
    h->attributes = (int16_t)be16(p + 21);
    h->last_offset_delta = (int32_t)be32(p + 23);
    h->first_timestamp = (int64_t)be64(p + 27);
    h->max_timestamp = (int64_t)be64(p + 35);
    h->producer_id = (int64_t)be64(p + 43);
    h->producer_epoch = (int16_t)be16(p + 51);
    h->base_sequence = (int32_t)be32(p + 53);
    h->record_count = (int32_t)be32(p + 57);
}

/* Set BatchScanError(kind, position, detail); returns -1 for the caller to pass on. */
static int scan_error(const char *kind, Py_ssize_t position, const char *fmt, ...) {
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    PyObject *args = Py_BuildValue("(sns)", kind, position, detail);
    if (args != NULL) {
        PyErr_SetObject(BatchScanError, args);
        Py_DECREF(args);
    }
    return -1;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* CRC-32C with SSE 4.2's crc32 instruction, in three independent streams (its latency is
 * three cycles, its throughput one per cycle), joined by "append n zero bytes" operators
 * tabulated at import: Mark Adler's method (crc32c.c, zlib licence, stackoverflow.com/a/
 * 17646775). Calling the crc32c package once per batch cost more than this whole loop. */
#include <nmmintrin.h>
#define HW_CRC 1
#define CRC32C_POLY 0x82f63b78u
#define CRC_LONG 4096
#define CRC_SHORT 256
static uint32_t crc_long_zeros[4][256], crc_short_zeros[4][256];
static int have_sse42;

static uint32_t gf2_matrix_times(const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    while (vec) {
        if (vec & 1) sum ^= *mat;
        vec >>= 1;
        mat++;
    }
    return sum;
}

static void gf2_matrix_square(uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; n++) square[n] = gf2_matrix_times(mat, mat[n]);
}

/* The operator that appends len zero bytes to a CRC register (len a power of two). */
static void zeros_operator(uint32_t *even, size_t len) {
    uint32_t odd[32], row = 1;
    odd[0] = CRC32C_POLY; /* one zero bit */
    for (int n = 1; n < 32; n++) {
        odd[n] = row;
        row <<= 1;
    }
    gf2_matrix_square(even, odd); /* two zero bits */
    gf2_matrix_square(odd, even); /* four */
    /* The first square gives one zero byte (eight bits), in even. */
    do {
        gf2_matrix_square(even, odd);
        len >>= 1;
        if (len == 0) return;
        gf2_matrix_square(odd, even);
        len >>= 1;
    } while (len);
    for (int n = 0; n < 32; n++) even[n] = odd[n];
}

static void zeros_table(uint32_t zeros[][256], size_t len) {
    uint32_t op[32];
    zeros_operator(op, len);
    for (uint32_t n = 0; n < 256; n++) {
        zeros[0][n] = gf2_matrix_times(op, n);
        zeros[1][n] = gf2_matrix_times(op, n << 8);
        zeros[2][n] = gf2_matrix_times(op, n << 16);
        zeros[3][n] = gf2_matrix_times(op, n << 24);
    }
}

static inline uint64_t shift_crc(uint32_t zeros[][256], uint64_t crc) {
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^ zeros[2][(crc >> 16) & 0xff] ^
           zeros[3][(crc >> 24) & 0xff];
}

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(const uint8_t *next, size_t len) {
    uint64_t crc0 = 0xffffffffu, crc1, crc2;
    while (len && ((uintptr_t)next & 7) != 0) {
        crc0 = _mm_crc32_u8((uint32_t)crc0, *next++);
        len--;
    }
    while (len >= CRC_LONG * 3) {
        crc1 = crc2 = 0;
        const uint8_t *end = next + CRC_LONG;
        do {
            crc0 = _mm_crc32_u64(crc0, load64(next));
            crc1 = _mm_crc32_u64(crc1, load64(next + CRC_LONG));
            crc2 = _mm_crc32_u64(crc2, load64(next + 2 * CRC_LONG));
            next += 8;
        } while (next < end);
        crc0 = shift_crc(crc_long_zeros, crc0) ^ crc1;
        crc0 = shift_crc(crc_long_zeros, crc0) ^ crc2;
        next += CRC_LONG * 2;
        len -= CRC_LONG * 3;
    }
    while (len >= CRC_SHORT * 3) {
        crc1 = crc2 = 0;
        const uint8_t *end = next + CRC_SHORT;
        do {
            crc0 = _mm_crc32_u64(crc0, load64(next));
            crc1 = _mm_crc32_u64(crc1, load64(next + CRC_SHORT));
            crc2 = _mm_crc32_u64(crc2, load64(next + 2 * CRC_SHORT));
            next += 8;
        } while (next < end);
        crc0 = shift_crc(crc_short_zeros, crc0) ^ crc1;
        crc0 = shift_crc(crc_short_zeros, crc0) ^ crc2;
        next += CRC_SHORT * 2;
        len -= CRC_SHORT * 3;
    }
    while (len >= 8) {
        crc0 = _mm_crc32_u64(crc0, load64(next));
        next += 8;
        len -= 8;
    }
    while (len) {
        crc0 = _mm_crc32_u8((uint32_t)crc0, *next++);
        len--;
    }
    return (uint32_t)crc0 ^ 0xffffffffu;
}

#endif

/* CRC-32C of n bytes at p: the instruction where the CPU has it, else the crc32c package. */
static int crc32c_of(const uint8_t *p, Py_ssize_t n, uint32_t *out) {
#ifdef HW_CRC
    if (have_sse42) {
        *out = crc32c_hw(p, (size_t)n);
        return 0;
    }
#endif
    PyObject *view = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ);
    if (view == NULL) return -1;
    PyObject *result = PyObject_CallOneArg(crc32c_fn, view);
    Py_DECREF(view);
    if (result == NULL) return -1;
    unsigned long v = PyLong_AsUnsignedLong(result);
    Py_DECREF(result);
    if (v == (unsigned long)-1 && PyErr_Occurred()) return -1;
    *out = (uint32_t)v;
    return 0;
}

PyDoc_STRVAR(crc32c_doc,
             "crc32c(data) -> int\n\nCRC-32C of a bytes-like object, as the scanner computes it.");

static PyObject *py_crc32c(PyObject *self, PyObject *data) {
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t crc;
    int failed = crc32c_of((const uint8_t *)view.buf, view.len, &crc);
    PyBuffer_Release(&view);
    return failed ? NULL : PyLong_FromUnsignedLong(crc);
}

/* Validate the batch at buf[pos:limit] (the rules and messages of record_batch.py) and
 * parse its header into h. max_batch_size < 0: no bound beyond the buffer. A producer's
 * batch (strict) holds records at every offset of its range; a batch the log cleaner
 * rewrote keeps its range (base offset and last offset delta) with fewer records, or none
 * (Kafka's empty batch), so elsewhere the count only has to fit the range. */
static int check_batch(const uint8_t *buf, Py_ssize_t pos, Py_ssize_t limit,
                       long long max_batch_size, int strict, header_t *h) {
    if (limit - pos < HEADER_SIZE)
        return scan_error("TRUNCATED", pos, "%lld bytes left", (long long)(limit - pos));
    parse_header(buf + pos, h);
    long long size = (long long)h->batch_length + LOG_OVERHEAD;
    if (size < HEADER_SIZE || (max_batch_size >= 0 && size > max_batch_size))
        return scan_error("LENGTH_OUT_OF_BOUNDS", pos, "batch length %d", h->batch_length);
    if (h->magic != MAGIC) return scan_error("BAD_MAGIC", pos, "magic %d", h->magic);
    if (size > (long long)(limit - pos))
        return scan_error("TRUNCATED", pos, "needs %lld bytes, %lld left", size,
                          (long long)(limit - pos));
    if (strict ? (h->record_count <= 0 ||
                  (long long)h->last_offset_delta != (long long)h->record_count - 1)
               : (h->record_count < 0 || h->last_offset_delta < 0 ||
                  (long long)h->record_count > (long long)h->last_offset_delta + 1))
        return scan_error("RECORD_COUNT_MISMATCH", pos, "record count %d, last offset delta %d",
                          h->record_count, h->last_offset_delta);
    uint32_t actual;
    if (crc32c_of(buf + pos + 21, (Py_ssize_t)size - 21, &actual) < 0) return -1;
    if (actual != h->crc)
        return scan_error("CRC_MISMATCH", pos, "stored 0x%08x, computed 0x%08x", h->crc, actual);
    return 0;
}

static int as_ssize(PyObject *o, Py_ssize_t *out) {
    *out = PyLong_AsSsize_t(o);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int as_longlong(PyObject *o, long long *out) {
    *out = PyLong_AsLongLong(o);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

PyDoc_STRVAR(header_fields_doc,
             "header_fields(buf, pos, limit, max_batch_size=-1) -> tuple\n\n"
             "Validate the batch at buf[pos:limit] (header, length, magic, record count, CRC)\n"
             "and return its 13 header fields in BatchHeader's order. A max_batch_size >= 0\n"
             "rejects longer batches as LENGTH_OUT_OF_BOUNDS.");

static PyObject *header_fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 3 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "header_fields(buf, pos, limit, max_batch_size=-1)");
        return NULL;
    }
    Py_ssize_t pos, limit;
    long long max_batch_size = -1;
    if (as_ssize(args[1], &pos) < 0 || as_ssize(args[2], &limit) < 0) return NULL;
    if (nargs == 4 && as_longlong(args[3], &max_batch_size) < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *result = NULL;
    if (pos < 0 || limit > view.len || pos > limit) {
        PyErr_Format(PyExc_ValueError, "positions [%zd, %zd) outside a buffer of %zd bytes", pos,
                     limit, view.len);
        goto done;
    }
    header_t h;
    if (check_batch((const uint8_t *)view.buf, pos, limit, max_batch_size, 0, &h) < 0) goto done;
    result = Py_BuildValue("(LiiiIiiLLLiii)", (long long)h.base_offset, h.batch_length,
                           h.partition_leader_epoch, (int)h.magic, (unsigned int)h.crc,
                           (int)h.attributes, h.last_offset_delta, (long long)h.first_timestamp,
                           (long long)h.max_timestamp, (long long)h.producer_id,
                           (int)h.producer_epoch, h.base_sequence, h.record_count);
done:
    PyBuffer_Release(&view);
    return result;
}

/* What a scan found: the fields of a LogAppendInfo, plus the first batch's max timestamp
 * (a segment's time-based roll counts from it). */
typedef struct {
    long long first, last, max_ts, first_batch_max_ts, num_records;
    Py_ssize_t num_batches, valid_bytes;
} scan_t;

static int too_large(Py_ssize_t pos, long long size, long long max_message_bytes) {
    return scan_error("MESSAGE_TOO_LARGE", pos,
                      "batch at byte %lld is %lld bytes, larger than max.message.bytes %lld",
                      (long long)pos, size, max_message_bytes);
}

/* Kafka's LogValidator on the records of a leader's batch: uncompressed records are
 * walked here; a compressed batch goes to check_compressed(buf, pos) (record_batch.py
 * decompresses it and walks its records), which raises BatchScanError if they are bad. */
static int check_leader_records(PyObject *owner, const uint8_t *buf, Py_ssize_t pos,
                                const header_t *h, PyObject *check_compressed) {
    int codec = h->attributes & 0x07;
    if (codec != 0) {
        PyObject *r = PyObject_CallFunction(check_compressed, "On", owner, pos);
        if (r == NULL) return -1;
        Py_DECREF(r);
        return 0;
    }
    const char *what = NULL;
    ptrdiff_t at = 0;
    if (walk_records(buf + pos + HEADER_SIZE, (size_t)h->batch_length + LOG_OVERHEAD - HEADER_SIZE,
                     h->record_count, &what, &at) < 0)
        return scan_error("INVALID_RECORD", pos, "%s (byte %lld of the records)", what,
                          (long long)at);
    return 0;
}

/* The leader's loop: validate every batch and its records, stamp base offsets (from first
 * on) and the leader epoch in place. `owner` is the Python object of buf. */
static int do_scan_leader(PyObject *owner, uint8_t *buf, Py_ssize_t n, long long first,
                          long long leader_epoch, long long max_message_bytes,
                          PyObject *check_compressed, scan_t *out) {
    Py_ssize_t pos = 0, num_batches = 0;
    long long offset = first, max_ts = -1, first_batch_max_ts = -1;
    while (pos < n) {
        header_t h;
        if (check_batch(buf, pos, n, -1, 1, &h) < 0) return -1;
        long long size = (long long)h.batch_length + LOG_OVERHEAD;
        if (size > max_message_bytes) return too_large(pos, size, max_message_bytes);
        if (check_leader_records(owner, buf, pos, &h, check_compressed) < 0) return -1;
        put_be64(buf + pos, (uint64_t)offset);
        put_be32(buf + pos + 12, (uint32_t)leader_epoch);
        offset += h.record_count;
        if (pos == 0) first_batch_max_ts = h.max_timestamp;
        if (h.max_timestamp > max_ts) max_ts = h.max_timestamp;
        pos += (Py_ssize_t)size;
        num_batches++;
    }
    *out = (scan_t){first, offset - 1, max_ts, first_batch_max_ts, offset - first, num_batches, n};
    return 0;
}

/* The follower's loop: validate every batch; the first must not lie below the LEO, the
 * rest follow it without gaps (one fetch comes from one leader segment), and leader epochs
 * never go below latest_epoch or each other. Appends (epoch, start offset) to *new_epochs (a
 * list made on the first) for every epoch newer than latest_epoch (only a newer epoch starts
 * an entry, as Kafka's recovery does). */
static int do_scan_follower(const uint8_t *buf, Py_ssize_t n, long long leo, long long last_epoch,
                            long long max_message_bytes, PyObject **new_epochs, scan_t *out) {
    Py_ssize_t pos = 0, num_batches = 0;
    long long first = -1, prev_last = -1, max_ts = -1, first_batch_max_ts = -1, count = 0;
    while (pos < n) {
        header_t h;
        if (check_batch(buf, pos, n, -1, 0, &h) < 0) return -1;
        long long size = (long long)h.batch_length + LOG_OVERHEAD;
        if (size > max_message_bytes) return too_large(pos, size, max_message_bytes);
        long long base = h.base_offset, epoch = h.partition_leader_epoch;
        if (pos == 0) {
            first = base;
            first_batch_max_ts = h.max_timestamp;
            if (first < leo)
                return scan_error("OUT_OF_SEQUENCE", pos,
                                  "first batch has base offset %lld, below LEO %lld", first, leo);
        } else if (base != prev_last + 1) {
            return scan_error("OUT_OF_SEQUENCE", pos,
                              "batch at byte %lld has base offset %lld, expected %lld",
                              (long long)pos, base, prev_last + 1);
        }
        if (epoch < last_epoch)
            return scan_error("OUT_OF_SEQUENCE", pos,
                              "batch at byte %lld has leader epoch %lld below %lld",
                              (long long)pos, epoch, last_epoch);
        if (epoch > last_epoch) {
            if (*new_epochs == NULL && (*new_epochs = PyList_New(0)) == NULL) return -1;
            PyObject *entry = Py_BuildValue("(LL)", epoch, base);
            if (entry == NULL) return -1;
            int failed = PyList_Append(*new_epochs, entry);
            Py_DECREF(entry);
            if (failed) return -1;
            last_epoch = epoch;
        }
        prev_last = base + h.last_offset_delta;
        if (h.max_timestamp > max_ts) max_ts = h.max_timestamp;
        count += h.record_count;
        pos += (Py_ssize_t)size;
        num_batches++;
    }
    *out = (scan_t){first, prev_last, max_ts, first_batch_max_ts, count, num_batches, n};
    return 0;
}

static PyObject *info_of(const scan_t *s, PyObject *new_epochs) {
    return new_append_info(s->first, s->last, s->max_ts, s->num_batches, s->num_records,
                           s->valid_bytes, new_epochs);
}

/* ---------------------------------------------------------------------------------------
 * SegmentAppender: the append side of a log segment (the base class of LogSegment).
 *
 * It holds what every append reads and moves (file descriptor, size, next offset, bytes
 * since the last index entry, the first batch's and the largest timestamp, the creation
 * time) and the index's entry arrays, so that one C call scans a request, decides whether
 * the segment must roll first, writes it and keeps the index: the produce and replica-fetch
 * paths' per-request cost. The attributes are plain members, read and written by
 * LogSegment's Python code.
 */
#define NO_VALUE LLONG_MIN /* a timestamp not known yet (Python sees None) */
#define INT32_MAX_LL 2147483647LL

typedef struct {
    PyObject_HEAD
    int fd;
    long long base_offset;
    long long size;
    long long next_offset;
    long long index_interval_bytes;
    long long bytes_since_last_index_entry;
    long long first_batch_timestamp;
    long long largest_timestamp;
    long long created_ms;
    PyObject *index_offsets;   /* array('q') of the index: last offsets */
    PyObject *index_positions; /* array('q') of the index: file positions */
    PyObject *offsets_append;  /* their bound append methods (no lookup per entry) */
    PyObject *positions_append;
} SegmentAppender;

static PyObject *str_append;

static int appender_traverse(SegmentAppender *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->index_offsets);
    Py_VISIT(self->index_positions);
    Py_VISIT(self->offsets_append);
    Py_VISIT(self->positions_append);
    return 0;
}

static int appender_clear(SegmentAppender *self) {
    Py_CLEAR(self->index_offsets);
    Py_CLEAR(self->index_positions);
    Py_CLEAR(self->offsets_append);
    Py_CLEAR(self->positions_append);
    return 0;
}

static void appender_dealloc(SegmentAppender *self) {
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    appender_clear(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *appender_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    SegmentAppender *self = (SegmentAppender *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->fd = -1;
    self->first_batch_timestamp = NO_VALUE;
    self->largest_timestamp = NO_VALUE;
    return (PyObject *)self;
}

/* An optional timestamp member: None when unknown. */
static PyObject *get_ts(long long v) {
    if (v == NO_VALUE) Py_RETURN_NONE;
    return PyLong_FromLongLong(v);
}

static int set_ts(long long *slot, PyObject *value) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete a timestamp");
        return -1;
    }
    if (value == Py_None) {
        *slot = NO_VALUE;
        return 0;
    }
    long long v = PyLong_AsLongLong(value);
    if (v == -1 && PyErr_Occurred()) return -1;
    *slot = v;
    return 0;
}

static PyObject *get_first_ts(SegmentAppender *self, void *c) {
    return get_ts(self->first_batch_timestamp);
}
static int set_first_ts(SegmentAppender *self, PyObject *v, void *c) {
    return set_ts(&self->first_batch_timestamp, v);
}
static PyObject *get_largest_ts(SegmentAppender *self, void *c) {
    return get_ts(self->largest_timestamp);
}
static int set_largest_ts(SegmentAppender *self, PyObject *v, void *c) {
    return set_ts(&self->largest_timestamp, v);
}

static int set_array(PyObject **slot, PyObject **append_slot, PyObject *value) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete the index arrays");
        return -1;
    }
    PyObject *append = PyObject_GetAttr(value, str_append);
    if (append == NULL) return -1;
    Py_XSETREF(*append_slot, append);
    Py_INCREF(value);
    Py_XSETREF(*slot, value);
    return 0;
}
static PyObject *get_offsets(SegmentAppender *self, void *c) {
    return Py_NewRef(self->index_offsets ? self->index_offsets : Py_None);
}
static int set_offsets(SegmentAppender *self, PyObject *v, void *c) {
    return set_array(&self->index_offsets, &self->offsets_append, v);
}
static PyObject *get_positions(SegmentAppender *self, void *c) {
    return Py_NewRef(self->index_positions ? self->index_positions : Py_None);
}
static int set_positions(SegmentAppender *self, PyObject *v, void *c) {
    return set_array(&self->index_positions, &self->positions_append, v);
}

static PyGetSetDef appender_getset[] = {
    {"_first_batch_timestamp", (getter)get_first_ts, (setter)set_first_ts,
     "max timestamp of the segment's first batch (None: not read yet)", NULL},
    {"_largest_timestamp", (getter)get_largest_ts, (setter)set_largest_ts,
     "largest max timestamp of the segment's batches (None: not computed yet)", NULL},
    {"_index_offsets", (getter)get_offsets, (setter)set_offsets,
     "the index's array of last offsets (appended to on every index entry)", NULL},
    {"_index_positions", (getter)get_positions, (setter)set_positions,
     "the index's array of file positions", NULL},
    {NULL},
};

static PyMemberDef appender_members[] = {
    {"_fd", T_INT, offsetof(SegmentAppender, fd), 0, "the segment file's descriptor"},
    {"base_offset", T_LONGLONG, offsetof(SegmentAppender, base_offset), 0, NULL},
    {"size", T_LONGLONG, offsetof(SegmentAppender, size), 0, "bytes in the segment file"},
    {"next_offset", T_LONGLONG, offsetof(SegmentAppender, next_offset), 0,
     "offset the next appended record gets"},
    {"index_interval_bytes", T_LONGLONG, offsetof(SegmentAppender, index_interval_bytes), 0,
     NULL},
    {"created_ms", T_LONGLONG, offsetof(SegmentAppender, created_ms), 0,
     "when the segment was created (the time rule without record timestamps)"},
    {"_bytes_since_last_index_entry", T_LONGLONG,
     offsetof(SegmentAppender, bytes_since_last_index_entry), 0, NULL},
    {NULL},
};

/* The max timestamp of the segment's first batch, read from the file the first time it is
 * needed for a segment opened with data in it. */
static int first_batch_timestamp(SegmentAppender *self, long long *out) {
    if (self->first_batch_timestamp == NO_VALUE) {
        uint8_t raw[HEADER_SIZE];
        ssize_t got = pread(self->fd, raw, HEADER_SIZE, 0);
        if (got < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        if (got < HEADER_SIZE) {
            *out = -1; /* no whole header: no timestamp to count from */
            return 0;
        }
        header_t h;
        parse_header(raw, &h);
        self->first_batch_timestamp = h.max_timestamp;
    }
    *out = self->first_batch_timestamp;
    return 0;
}

/* Kafka's roll rules before an append (LogSegment.shouldRoll): the segment would outgrow
 * segment.bytes, offsets would outgrow the index's 32 bits, or segment.ms has passed since
 * the first batch's timestamp (since the segment's creation, by the caller's clock now_ms(),
 * when batches carry no timestamps). 1 = roll, 0 = append here, -1 = error. */
static int roll_due(SegmentAppender *self, const scan_t *s, long long segment_bytes,
                    long long segment_ms, PyObject *now_ms) {
    if (self->size == 0) return 0;
    if (self->size > segment_bytes - (long long)s->valid_bytes) return 1;
    if (s->last - self->base_offset > INT32_MAX_LL) return 1;
    long long first_ts;
    if (first_batch_timestamp(self, &first_ts) < 0) return -1;
    if (first_ts >= 0) return s->max_ts - first_ts >= segment_ms;
    PyObject *now = PyObject_CallNoArgs(now_ms);
    if (now == NULL) return -1;
    long long now_v = PyLong_AsLongLong(now);
    Py_DECREF(now);
    if (now_v == -1 && PyErr_Occurred()) return -1;
    return now_v - self->created_ms >= segment_ms;
}

/* Write the scanned request at the end of the segment (GIL released around pwrite), then
 * move size, next offset and timestamps, and add an index entry where one is due. */
static int write_scanned(SegmentAppender *self, const uint8_t *data, const scan_t *s) {
    long long position = self->size;
    Py_ssize_t n = s->valid_bytes, done = 0;
    while (done < n) {
        ssize_t w;
        Py_BEGIN_ALLOW_THREADS
        w = pwrite(self->fd, data + done, (size_t)(n - done), (off_t)(position + done));
        Py_END_ALLOW_THREADS
        if (w < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0) return -1;
                continue;
            }
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        done += w;
    }
    if (self->bytes_since_last_index_entry > self->index_interval_bytes) {
        /* Kafka's sparse index: an entry at most every index.interval.bytes. Offsets and
         * positions only grow, so the entry is after every earlier one. */
        PyObject *off = PyLong_FromLongLong(s->last), *pos = PyLong_FromLongLong(position);
        PyObject *r1 = NULL, *r2 = NULL;
        if (off != NULL && pos != NULL) {
            r1 = PyObject_CallOneArg(self->offsets_append, off);
            if (r1 != NULL) r2 = PyObject_CallOneArg(self->positions_append, pos);
        }
        Py_XDECREF(off);
        Py_XDECREF(pos);
        Py_XDECREF(r1);
        if (r2 == NULL) return -1;
        Py_DECREF(r2);
        self->bytes_since_last_index_entry = 0;
    }
    self->size = position + n;
    self->bytes_since_last_index_entry += n;
    self->next_offset = s->last + 1;
    if (position == 0) self->first_batch_timestamp = s->first_batch_max_ts;
    if (self->largest_timestamp != NO_VALUE && s->max_ts > self->largest_timestamp)
        self->largest_timestamp = s->max_ts;
    return 0;
}

/* A request as a whole: at least one batch, and no more bytes than a segment may hold. */
static int check_request_size(Py_ssize_t n, long long segment_bytes) {
    if (n == 0) return scan_error("EMPTY", 0, "no record batch in the request");
    if ((long long)n > segment_bytes)
        return scan_error("RECORD_LIST_TOO_LARGE", 0, "%lld bytes exceed segment.bytes %lld",
                          (long long)n, segment_bytes);
    return 0;
}

static int parse_append_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t expected,
                             const char *usage, long long *v) {
    if (nargs != expected || !PyCallable_Check(args[5]) ||
        (expected > 6 && !PyCallable_Check(args[6]))) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    for (int i = 0; i < 4; i++)
        if (as_longlong(args[i + 1], &v[i]) < 0) return -1;
    return 0;
}

static int check_open(SegmentAppender *self) {
    if (self->fd < 0 || self->offsets_append == NULL || self->positions_append == NULL) {
        PyErr_SetString(PyExc_ValueError, "segment is closed or not set up for appends");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(append_leader_doc,
             "append_leader(buf, leader_epoch, max_message_bytes, segment_bytes, segment_ms,\n"
             "              now_ms, check_compressed) -> LogAppendInfo | None\n\n"
             "A produce request on the leader: validate every batch of the writable buffer\n"
             "and its records (check_compressed(buf, pos) checks a compressed batch's),\n"
             "refuse one over max_message_bytes, stamp base offsets (from this segment's next\n"
             "offset on) and the leader epoch in place, and append it here. Stamping as it goes\n"
             "is safe: a request with a bad batch is rejected whole. None, with nothing\n"
             "written, when the segment must roll first (now_ms() is called only for the time\n"
             "rule of batches without timestamps).");

static PyObject *append_leader(SegmentAppender *self, PyObject *const *args, Py_ssize_t nargs) {
    long long v[4]; /* leader_epoch, max_message_bytes, segment_bytes, segment_ms */
    if (parse_append_args(args, nargs, 7,
                          "append_leader(buf, leader_epoch, max_message_bytes, segment_bytes, "
                          "segment_ms, now_ms, check_compressed)",
                          v) < 0 ||
        check_open(self) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_WRITABLE) < 0) return NULL;
    PyObject *result = NULL;
    scan_t s = {0};
    if (check_request_size(view.len, v[2]) < 0) goto done;
    if (do_scan_leader(args[0], (uint8_t *)view.buf, view.len, self->next_offset, v[0], v[1],
                       args[6], &s) < 0)
        goto done;
    int roll = roll_due(self, &s, v[2], v[3], args[5]);
    if (roll != 0) {
        if (roll > 0) result = Py_NewRef(Py_None);
        goto done;
    }
    if (write_scanned(self, (const uint8_t *)view.buf, &s) < 0) goto done;
    result = info_of(&s, NULL);
done:
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(append_follower_doc,
             "append_follower(buf, latest_epoch, max_message_bytes, segment_bytes, segment_ms,\n"
             "                now_ms) -> LogAppendInfo | None\n\n"
             "Batches a follower fetched: validate each, check that the first is not below this\n"
             "segment's next offset, that the rest follow without gaps and that leader epochs\n"
             "never go below latest_epoch or each other, and append them here. The info's\n"
             "new_epochs lists (epoch, start offset) of every epoch newer than latest_epoch\n"
             "(None if there is none). None, with nothing\n"
             "written, when the segment must roll first or the batches start past its next\n"
             "offset (a new segment must start there).");

static PyObject *append_follower(SegmentAppender *self, PyObject *const *args,
                                 Py_ssize_t nargs) {
    long long v[4]; /* latest_epoch, max_message_bytes, segment_bytes, segment_ms */
    if (parse_append_args(args, nargs, 6,
                          "append_follower(buf, latest_epoch, max_message_bytes, segment_bytes, "
                          "segment_ms, now_ms)",
                          v) < 0 ||
        check_open(self) < 0)
        return NULL;
    PyObject *new_epochs = NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *result = NULL;
    scan_t s = {0};
    if (check_request_size(view.len, v[2]) < 0) goto done;
    if (do_scan_follower((const uint8_t *)view.buf, view.len, self->next_offset, v[0], v[1],
                         &new_epochs, &s) < 0)
        goto done;
    int roll = s.first != self->next_offset ? 1 : roll_due(self, &s, v[2], v[3], args[5]);
    if (roll != 0) {
        if (roll > 0) result = Py_NewRef(Py_None);
        goto done;
    }
    if (write_scanned(self, (const uint8_t *)view.buf, &s) < 0) goto done;
    result = info_of(&s, new_epochs);
done:
    PyBuffer_Release(&view);
    Py_XDECREF(new_epochs);
    return result;
}

static PyMethodDef appender_methods[] = {
    {"append_leader", (PyCFunction)(void (*)(void))append_leader, METH_FASTCALL,
     append_leader_doc},
    {"append_follower", (PyCFunction)(void (*)(void))append_follower, METH_FASTCALL,
     append_follower_doc},
    {NULL},
};

static PyType_Slot appender_slots[] = {
    {Py_tp_doc, "The append side of a log segment, in C (base class of LogSegment)."},
    {Py_tp_new, appender_new},
    {Py_tp_dealloc, appender_dealloc},
    {Py_tp_traverse, appender_traverse},
    {Py_tp_clear, appender_clear},
    {Py_tp_members, appender_members},
    {Py_tp_getset, appender_getset},
    {Py_tp_methods, appender_methods},
    {0, NULL},
};

static PyType_Spec appender_spec = {
    .name = "minikafka.storage._batch_scan.SegmentAppender",
    .basicsize = sizeof(SegmentAppender),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = appender_slots,
};

static PyMethodDef methods[] = {
    {"crc32c", py_crc32c, METH_O, crc32c_doc},
    {"set_append_info_type", set_append_info_type, METH_O, set_append_info_type_doc},
    {"header_fields", (PyCFunction)(void (*)(void))header_fields, METH_FASTCALL, header_fields_doc},
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject *module) {
    PyObject *crc32c = PyImport_ImportModule("crc32c");
    if (crc32c == NULL) return -1;
    crc32c_fn = PyObject_GetAttrString(crc32c, "crc32c");
    Py_DECREF(crc32c);
    if (crc32c_fn == NULL) return -1;
#ifdef HW_CRC
    __builtin_cpu_init();
    have_sse42 = __builtin_cpu_supports("sse4.2");
    if (have_sse42) {
        zeros_table(crc_long_zeros, CRC_LONG);
        zeros_table(crc_short_zeros, CRC_SHORT);
    }
#endif
    str_append = PyUnicode_InternFromString("append");
    if (str_append == NULL) return -1;
    PyObject *appender = PyType_FromModuleAndSpec(module, &appender_spec, NULL);
    if (appender == NULL) return -1;
    if (PyModule_AddObject(module, "SegmentAppender", appender) < 0) {
        Py_DECREF(appender);
        return -1;
    }
    BatchScanError = PyErr_NewExceptionWithDoc(
        "minikafka.storage._batch_scan.BatchScanError",
        "A batch failed a check: args are (kind, position, detail).", PyExc_ValueError, NULL);
    if (BatchScanError == NULL) return -1;
    Py_INCREF(BatchScanError);
    if (PyModule_AddObject(module, "BatchScanError", BatchScanError) < 0) {
        Py_DECREF(BatchScanError);
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "minikafka.storage._batch_scan",
    .m_doc = "Record batch validation and the append paths, in C (see _batch_scan.c).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC PyInit__batch_scan(void) { return PyModuleDef_Init(&moduledef); }
