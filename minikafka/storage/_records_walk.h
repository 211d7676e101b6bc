/* Kafka's broker-side check of a batch's v2 records (LogValidator), shared by the append
 * path (_batch_scan.c: uncompressed batches, checked in place) and _record_codec.c
 * (check_records: compressed batches, after record_batch.py has decompressed them).
 *
 * A batch whose header and CRC are fine may still hold records that do not parse, fewer
 * or more records than its count, or offset deltas that are not 0, 1, 2, ... (Kafka:
 * "inner record offsets must be incremental"). Kafka refuses such a batch with
 * INVALID_RECORD; a consumer would otherwise fail on it for good. The walk reads varints
 * and skips bytes: no Python object is made.
 *
 * Plain C (no Python API): walk_records returns 0, or -1 with *what naming the problem and
 * *at its byte position within the records.
 */
#ifndef MINIKAFKA_RECORDS_WALK_H
#define MINIKAFKA_RECORDS_WALK_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const uint8_t *p, *end;
} walk_t;

/* A zigzag varint of at most max_bytes bytes. */
static inline int walk_varint(walk_t *w, int64_t *out, int max_bytes) {
    uint64_t z = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (w->p >= w->end) return -1;
        uint8_t b = *w->p++;
        z |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
            return 0;
        }
        shift += 7;
    }
    return -1;
}

/* A length-prefixed field; a length of -1 is null (allowed only where nullable). */
static inline int walk_bytes(walk_t *w, int nullable) {
    int64_t n;
    if (walk_varint(w, &n, 5) < 0) return -1;
    if (n == -1 && nullable) return 0;
    if (n < 0 || n > w->end - w->p) return -1;
    w->p += n;
    return 0;
}

static int walk_records(const uint8_t *start, size_t len, int64_t count, const char **what,
                        ptrdiff_t *at) {
    walk_t r = {start, start + len};
    for (int64_t i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta, nh;
        *at = r.p - start;
        if (walk_varint(&r, &length, 5) < 0 || length < 1 || length > r.end - r.p) {
            *what = r.p >= r.end ? "fewer records than the batch's record count"
                                 : "invalid record length";
            return -1;
        }
        walk_t rec = {r.p, r.p + length};
        r.p += length;
        rec.p++; /* attributes */
        if (walk_varint(&rec, &ts_delta, 10) < 0) {
            *what = "invalid timestamp delta";
            return -1;
        }
        if (walk_varint(&rec, &offset_delta, 5) < 0) {
            *what = "invalid offset delta";
            return -1;
        }
        if (offset_delta != i) {
            *what = "record offsets are not incremental (offset delta differs from its index)";
            return -1;
        }
        if (walk_bytes(&rec, 1) < 0) {
            *what = "invalid key length";
            return -1;
        }
        if (walk_bytes(&rec, 1) < 0) {
            *what = "invalid value length";
            return -1;
        }
        if (walk_varint(&rec, &nh, 5) < 0 || nh < 0 || nh > rec.end - rec.p) {
            *what = "invalid header count";
            return -1;
        }
        for (int64_t h = 0; h < nh; h++) {
            if (walk_bytes(&rec, 0) < 0) {
                *what = "invalid header key length";
                return -1;
            }
            if (walk_bytes(&rec, 1) < 0) {
                *what = "invalid header value length";
                return -1;
            }
        }
        if (rec.p != rec.end) {
            *what = "record length does not match its fields";
            return -1;
        }
    }
    if (r.p != r.end) {
        *at = r.p - start;
        *what = "more records than the batch's record count";
        return -1;
    }
    return 0;
}

#endif
