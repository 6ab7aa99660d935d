/* Strings from files (names, producer, op types, string tensors) shown on a
 * terminal: control characters, DEL, C1 controls, line separators, bidi
 * overrides and bytes that are not UTF-8 are written as \xNN, so a model
 * cannot move the cursor, recolour the screen or forge lines of output. */
#include "lantern.h"
#include <string.h>

/* Length of the well-formed UTF-8 sequence at s (2-4), 0 when there is none. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    unsigned lo = 0x80, hi = 0xbf; /* the second byte's range rules out overlongs and surrogates */
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (!n || s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* Code points a terminal acts on rather than shows: C1 controls, U+2028/9
 * (line and paragraph separators), U+202A-E and U+2066-9 (bidi controls). */
static int utf8_control(const unsigned char *s, int n)
{
    unsigned cp = n == 2 ? (s[0] & 0x1fu) << 6 | (s[1] & 0x3fu)
                 : n == 3 ? (s[0] & 0x0fu) << 12 | (s[1] & 0x3fu) << 6 | (s[2] & 0x3fu)
                          : 0;
    return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* The next piece of s as shown: one character as it is, or one byte as
 * \xNN. Returns the bytes of s it stands for; out gets a C string. */
static size_t piece(const unsigned char *s, char out[8])
{
    if (*s >= 0x20 && *s < 0x7f) {
        out[0] = (char)*s;
        out[1] = 0;
        return 1;
    }
    int n = *s >= 0x80 ? utf8_len(s) : 0;
    if (n && !utf8_control(s, n)) {
        memcpy(out, s, (size_t)n);
        out[n] = 0;
        return (size_t)n;
    }
    snprintf(out, 8, "\\x%02x", *s);
    return 1;
}

void lt_fputs_printable(const char *s, FILE *f)
{
    char p[8];
    for (const unsigned char *u = (const unsigned char *)(s ? s : ""); *u;) {
        u += piece(u, p);
        fputs(p, f);
    }
}

const char *lt_str_printable(const char *s, char *buf, size_t len)
{
    size_t at = 0;
    char p[8];
    if (!len)
        return buf;
    for (const unsigned char *u = (const unsigned char *)(s ? s : ""); *u;) {
        size_t used = piece(u, p), pl = strlen(p);
        if (at + pl + 1 > len)
            break;
        memcpy(buf + at, p, pl);
        at += pl;
        u += used;
    }
    buf[at] = 0;
    return buf;
}
