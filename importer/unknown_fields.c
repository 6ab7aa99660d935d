/* Fields the schema lantern is built with (Debian's onnx.proto, IR 8) does
 * not name, read from protobuf-c's unknown fields: IR 10's overload of
 * functions and calls, and the metadata_props newer IRs put on nodes and
 * graphs. A length-delimited unknown field keeps its length prefix. */
#include "import_impl.h"

bool lt_imp_unknown_payload(const ProtobufCMessageUnknownField *u, const uint8_t **p, size_t *len)
{
    if (u->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED)
        return false;
    uint64_t n = 0;
    size_t k = 0;
    for (int shift = 0; k < u->len && shift < 64; shift += 7) {
        uint8_t b = u->data[k++];
        n |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    if (k > u->len || n != u->len - k)
        return false;
    *p = u->data + k;
    *len = (size_t)n;
    return true;
}

void lt_imp_unknown_string(const ProtobufCMessage *msg, uint32_t tag, const uint8_t **p, size_t *len)
{
    *p = (const uint8_t *)"";
    *len = 0;
    for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
        const uint8_t *q;
        size_t n;
        /* the last occurrence wins, as protobuf's own parsers do */
        if (msg->unknown_fields[i].tag == tag && lt_imp_unknown_payload(&msg->unknown_fields[i], &q, &n)) {
            *p = q;
            *len = n;
        }
    }
}

/* One varint at *p (below end); false when cut short or over 10 bytes. */
static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *p < end && shift < 70; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

bool lt_imp_string_entry(const uint8_t *p, size_t len, lt_imp_span *key, lt_imp_span *value)
{
    const uint8_t *end = p + len;
    key->p = value->p = (const uint8_t *)"";
    key->len = value->len = 0;
    while (p < end) {
        uint64_t tag, n;
        if (!varint(&p, end, &tag))
            return false;
        switch (tag & 7) {
        case 0:
            if (!varint(&p, end, &n))
                return false;
            break;
        case 1:
        case 5: {
            size_t w = (tag & 7) == 1 ? 8 : 4;
            if ((size_t)(end - p) < w)
                return false;
            p += w;
            break;
        }
        case 2:
            if (!varint(&p, end, &n) || n > (uint64_t)(end - p))
                return false;
            if ((tag >> 3) == 1 || (tag >> 3) == 2) {
                lt_imp_span *s = (tag >> 3) == 1 ? key : value;
                s->p = p;
                s->len = (size_t)n;
            }
            p += n;
            break;
        default:
            return false;
        }
    }
    return true;
}
