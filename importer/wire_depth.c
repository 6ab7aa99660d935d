/* How deep the messages of a serialized protobuf nest, read from the wire
 * format before protobuf-c (which recurses without a limit) unpacks it. */
#include "import_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int sh = 0; sh < 64 && *p < end; sh += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* How deep messages nest in [p, end), read as message type d; stops early
 * past LT_MAX_PROTO_DEPTH. Malformed bytes end the walk: protobuf-c rejects
 * them afterwards. Each byte is read once, by the innermost message holding it. */
int lt_imp_wire_depth(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, int depth)
{
    int max = depth;
    while (p < end && max <= LT_MAX_PROTO_DEPTH) {
        uint64_t key, x;
        if (!wire_varint(&p, end, &key) || (key >> 3) > 0x1fffffff)
            break;
        unsigned wt = key & 7;
        if (wt == 0 && wire_varint(&p, end, &x))
            continue;
        if ((wt == 1 && end - p >= 8) || (wt == 5 && end - p >= 4)) {
            p += wt == 1 ? 8 : 4;
            continue;
        }
        if (wt != 2 || !wire_varint(&p, end, &x) || x > (uint64_t)(end - p))
            break;
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
        if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
            int sub = lt_imp_wire_depth(f->descriptor, p, p + x, depth + 1);
            max = sub > max ? sub : max;
        }
        p += x;
    }
    return max;
}
