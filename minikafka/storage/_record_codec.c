/* Kafka's v2 record format (the records inside a magic-2 batch), encoded and decoded in C.
 *
 * A record is:
 *   length          varint   bytes of the record after this field
 *   attributes      int8     unused (0)
 *   timestampDelta  varlong  from the batch's first timestamp
 *   offsetDelta     varint   from the batch's base offset
 *   keyLength       varint   -1: null key
 *   key             bytes
 *   valueLength     varint   -1: null value
 *   value           bytes
 *   headerCount     varint
 *   headers         [headerKeyLength varint, headerKey utf-8,
 *                    headerValueLength varint (-1: null), headerValue]
 * Varints are zigzag-encoded, as protobuf's sint32/sint64 (Kafka's ByteUtils.writeVarint).
 *
 * Brokers never decode records on the replication path; this is for clients, tools and
 * the broker's validation of what clients send.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_records_walk.h"

static PyObject *RecordDecodeError; /* ValueError subclass */

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline int varint_size(int64_t v) {
    uint64_t z = zigzag(v);
    int n = 1;
    while (z >= 0x80) {
        z >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *put_varint(uint8_t *p, int64_t v) {
    uint64_t z = zigzag(v);
    while (z >= 0x80) {
        *p++ = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    *p++ = (uint8_t)z;
    return p;
}

/* A key, value or header value: None or any bytes-like object. */
typedef struct {
    Py_buffer view;
    int present;
} field_t;

static int get_field(PyObject *o, field_t *f, const char *what) {
    f->present = 0;
    if (o == Py_None) return 0;
    if (PyObject_GetBuffer(o, &f->view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "record %s must be bytes or None, not %.80s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    f->present = 1;
    return 0;
}

static void release_field(field_t *f) {
    if (f->present) PyBuffer_Release(&f->view);
    f->present = 0;
}

static inline Py_ssize_t field_size(const field_t *f) {
    return f->present ? varint_size(f->view.len) + f->view.len : 1;
}

static inline uint8_t *put_field(uint8_t *p, const field_t *f) {
    if (!f->present) return put_varint(p, -1);
    p = put_varint(p, f->view.len);
    memcpy(p, f->view.buf, (size_t)f->view.len);
    return p + f->view.len;
}

/* encode_record(out: bytearray, pos, offset_delta, timestamp_delta, key, value, headers)
 *   -> int
 * Writes one record into `out` at `pos` and returns the position after it. `out` grows
 * (doubling) when the record does not fit; bytes past the returned position are not part of
 * the records, so a buffer keeps its allocation from batch to batch. `headers` is a sequence
 * of (str, bytes | None) pairs. */
static PyObject *encode_record(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "encode_record takes 7 arguments");
        return NULL;
    }
    PyObject *out = args[0];
    if (!PyByteArray_Check(out)) {
        PyErr_SetString(PyExc_TypeError, "encode_record writes into a bytearray");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    if (start < 0 || start > PyByteArray_GET_SIZE(out)) {
        PyErr_SetString(PyExc_ValueError, "encode_record: position outside the buffer");
        return NULL;
    }
    args++; /* the rest as before the position argument */
    long long offset_delta = PyLong_AsLongLong(args[1]);
    if (offset_delta == -1 && PyErr_Occurred()) return NULL;
    long long ts_delta = PyLong_AsLongLong(args[2]);
    if (ts_delta == -1 && PyErr_Occurred()) return NULL;

    PyObject *result = NULL, *hseq = NULL;
    field_t key = {0}, value = {0};
    field_t *hvalues = NULL;
    const char **hkeys = NULL;
    Py_ssize_t *hkey_lens = NULL, nh = 0, i;
    if (get_field(args[3], &key, "key") < 0) goto done;
    if (get_field(args[4], &value, "value") < 0) goto done;
    hseq = PySequence_Fast(args[5], "record headers must be a sequence of (str, bytes) pairs");
    if (hseq == NULL) goto done;
    nh = PySequence_Fast_GET_SIZE(hseq);
    if (nh > 0) {
        hvalues = PyMem_Calloc((size_t)nh, sizeof(field_t));
        hkeys = PyMem_Calloc((size_t)nh, sizeof(char *));
        hkey_lens = PyMem_Calloc((size_t)nh, sizeof(Py_ssize_t));
        if (hvalues == NULL || hkeys == NULL || hkey_lens == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_ssize_t body = 1 + varint_size(ts_delta) + varint_size(offset_delta) +
                      field_size(&key) + field_size(&value) + varint_size(nh);
    for (i = 0; i < nh; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(hseq, i);
        if (!PyTuple_Check(pair) && !PyList_Check(pair)) {
            PyErr_SetString(PyExc_TypeError, "a record header is a (str, bytes) pair");
            goto done;
        }
        if (PySequence_Size(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "a record header is a (str, bytes) pair");
            goto done;
        }
        PyObject *k = PySequence_Fast_GET_ITEM(pair, 0);
        PyObject *v = PySequence_Fast_GET_ITEM(pair, 1);
        if (!PyUnicode_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "a record header's key must be a str");
            goto done;
        }
        hkeys[i] = PyUnicode_AsUTF8AndSize(k, &hkey_lens[i]);
        if (hkeys[i] == NULL) goto done;
        if (get_field(v, &hvalues[i], "header value") < 0) goto done;
        body += varint_size(hkey_lens[i]) + hkey_lens[i] + field_size(&hvalues[i]);
    }
    Py_ssize_t total = varint_size(body) + body;
    Py_ssize_t have = PyByteArray_GET_SIZE(out);
    if (start + total > have) {
        Py_ssize_t want = have * 2 > start + total ? have * 2 : start + total;
        if (PyByteArray_Resize(out, want) < 0) goto done;
    }
    uint8_t *p = (uint8_t *)PyByteArray_AS_STRING(out) + start;
    p = put_varint(p, body);
    *p++ = 0; /* attributes */
    p = put_varint(p, ts_delta);
    p = put_varint(p, offset_delta);
    p = put_field(p, &key);
    p = put_field(p, &value);
    p = put_varint(p, nh);
    for (i = 0; i < nh; i++) {
        p = put_varint(p, hkey_lens[i]);
        memcpy(p, hkeys[i], (size_t)hkey_lens[i]);
        p += hkey_lens[i];
        p = put_field(p, &hvalues[i]);
    }
    result = PyLong_FromSsize_t(start + total);
done:
    release_field(&key);
    release_field(&value);
    for (i = 0; hvalues != NULL && i < nh; i++) release_field(&hvalues[i]);
    PyMem_Free(hvalues);
    PyMem_Free(hkeys);
    PyMem_Free(hkey_lens);
    Py_XDECREF(hseq);
    return result;
}

/* --- decoding ------------------------------------------------------------------------ */

typedef struct {
    const uint8_t *p, *end, *start;
} reader_t;

static int fail(const reader_t *r, const char *what) {
    PyErr_Format(RecordDecodeError, "%s at byte %zd of the records", what,
                 (Py_ssize_t)(r->p - r->start));
    return -1;
}

static int get_varint(reader_t *r, int64_t *out, int max_bytes, const char *what) {
    uint64_t z = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (r->p >= r->end) return fail(r, what);
        uint8_t b = *r->p++;
        z |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
            return 0;
        }
        shift += 7;
    }
    return fail(r, what);
}

/* A length-prefixed field: NULL-returning error, Py_None for -1, else bytes. */
static PyObject *get_bytes(reader_t *r, const char *what) {
    int64_t n;
    if (get_varint(r, &n, 5, what) < 0) return NULL;
    if (n == -1) Py_RETURN_NONE;
    if (n < 0 || n > r->end - r->p) {
        fail(r, what);
        return NULL;
    }
    PyObject *o = PyBytes_FromStringAndSize((const char *)r->p, (Py_ssize_t)n);
    r->p += n;
    return o;
}

/* decode_records(records, base_offset, first_timestamp, log_append_time, count)
 *   -> list[(offset, timestamp, key, value, headers)]
 * `records` is the bytes after the batch header (decompressed); `log_append_time` is the
 * batch's max timestamp when its timestamp type is LogAppendTime, else -1. Raises
 * RecordDecodeError if the bytes are not exactly `count` well-formed records. */
static PyObject *decode_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "decode_records takes 5 arguments");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    long long base_offset = PyLong_AsLongLong(args[1]);
    long long first_ts = PyLong_AsLongLong(args[2]);
    long long append_time = PyLong_AsLongLong(args[3]);
    Py_ssize_t count = PyLong_AsSsize_t(args[4]);
    PyObject *list = NULL;
    if (PyErr_Occurred()) goto error;
    if (count < 0) {
        PyErr_SetString(RecordDecodeError, "negative record count");
        goto error;
    }
    reader_t r = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len,
                  (const uint8_t *)view.buf};
    /* Each record takes at least 7 bytes: do not preallocate for a lying count. */
    list = PyList_New(0);
    if (list == NULL) goto error;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta, nh;
        if (get_varint(&r, &length, 5, "bad record length") < 0) goto error;
        if (length < 0 || length > r.end - r.p) {
            fail(&r, "record length beyond the batch");
            goto error;
        }
        reader_t rec = {r.p, r.p + length, r.start};
        r.p += length;
        if (rec.p >= rec.end) {
            fail(&rec, "empty record");
            goto error;
        }
        rec.p++; /* attributes */
        if (get_varint(&rec, &ts_delta, 10, "bad timestamp delta") < 0) goto error;
        if (get_varint(&rec, &offset_delta, 5, "bad offset delta") < 0) goto error;
        PyObject *key = get_bytes(&rec, "bad key length");
        if (key == NULL) goto error;
        PyObject *value = get_bytes(&rec, "bad value length");
        if (value == NULL) {
            Py_DECREF(key);
            goto error;
        }
        PyObject *headers = NULL;
        if (get_varint(&rec, &nh, 5, "bad header count") < 0 || nh < 0 ||
            nh > rec.end - rec.p) {
            if (!PyErr_Occurred()) fail(&rec, "bad header count");
            goto record_error;
        }
        headers = PyTuple_New((Py_ssize_t)nh);
        if (headers == NULL) goto record_error;
        for (int64_t h = 0; h < nh; h++) {
            int64_t klen;
            if (get_varint(&rec, &klen, 5, "bad header key length") < 0) goto record_error;
            if (klen < 0 || klen > rec.end - rec.p) {
                fail(&rec, "bad header key length");
                goto record_error;
            }
            PyObject *hk = PyUnicode_DecodeUTF8((const char *)rec.p, (Py_ssize_t)klen, "strict");
            if (hk == NULL) {
                PyErr_Clear();
                fail(&rec, "header key is not UTF-8");
                goto record_error;
            }
            rec.p += klen;
            PyObject *hv = get_bytes(&rec, "bad header value length");
            if (hv == NULL) {
                Py_DECREF(hk);
                goto record_error;
            }
            PyObject *pair = PyTuple_Pack(2, hk, hv);
            Py_DECREF(hk);
            Py_DECREF(hv);
            if (pair == NULL) goto record_error;
            PyTuple_SET_ITEM(headers, (Py_ssize_t)h, pair);
        }
        if (rec.p != rec.end) {
            fail(&rec, "record longer than its fields");
            goto record_error;
        }
        long long ts = append_time >= 0 ? append_time : first_ts + ts_delta;
        PyObject *item = Py_BuildValue("(LLNNN)", base_offset + offset_delta, ts, key, value,
                                       headers);
        if (item == NULL) goto error; /* N stole the references */
        if (PyList_Append(list, item) < 0) {
            Py_DECREF(item);
            goto error;
        }
        Py_DECREF(item);
        continue;
    record_error:
        Py_DECREF(key);
        Py_DECREF(value);
        Py_XDECREF(headers);
        goto error;
    }
    if (r.p != r.end) {
        fail(&r, "bytes after the last record the header counts");
        goto error;
    }
    PyBuffer_Release(&view);
    return list;
error:
    Py_XDECREF(list);
    PyBuffer_Release(&view);
    return NULL;
}

/* check_records(records, count) -> None: Kafka's broker-side check of a batch's records
 * (see _records_walk.h); raises RecordDecodeError. For compressed batches, whose records
 * record_batch.py has decompressed (the append path checks uncompressed ones in place). */
static PyObject *check_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "check_records takes 2 arguments");
        return NULL;
    }
    long long count = PyLong_AsLongLong(args[1]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const char *what = NULL;
    ptrdiff_t at = 0;
    int failed = walk_records((const uint8_t *)view.buf, (size_t)view.len, count, &what, &at);
    PyBuffer_Release(&view);
    if (failed) {
        PyErr_Format(RecordDecodeError, "%s at byte %zd of the records", what, (Py_ssize_t)at);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"check_records", (PyCFunction)(void (*)(void))check_records, METH_FASTCALL,
     "Check that a batch's (decompressed) records are exactly `count` well-formed records."},
    {"encode_record", (PyCFunction)(void (*)(void))encode_record, METH_FASTCALL,
     "Write one v2 record into a bytearray at a position; returns the position after it."},
    {"decode_records", (PyCFunction)(void (*)(void))decode_records, METH_FASTCALL,
     "Decode a batch's v2 records into (offset, timestamp, key, value, headers) tuples."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_record_codec", NULL, -1, methods,
                                     NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__record_codec(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    RecordDecodeError = PyErr_NewException("minikafka.storage._record_codec.RecordDecodeError",
                                           PyExc_ValueError, NULL);
    if (RecordDecodeError == NULL || PyModule_AddObjectRef(m, "RecordDecodeError",
                                                           RecordDecodeError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
