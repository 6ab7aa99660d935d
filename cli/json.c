/* The --json writer: containers, keys and values with the commas between
 * them, and string escaping (the rules are in json.h). */
#include "json.h"
#include <math.h>
#include <stdlib.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when the byte at s
 * does not start one (RFC 3629: no overlong forms, no surrogates, nothing
 * past U+10FFFF). */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n)
        return 0;
    /* the second byte's range is narrower after E0, ED, F0 and F4 */
    unsigned lo = 0x80, hi = 0xbf;
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

void lt_json_write_string(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        unsigned c = *s;
        int n = utf8_len(s);
        if (n > 1) {
            fwrite(s, 1, (size_t)n, f);
            s += n;
            continue;
        }
        s++;
        if (n == 0)
            fputs("\\ufffd", f);
        else if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c == '\r')
            fputs("\\r", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc((int)c, f);
    }
    fputc('"', f);
}

void lt_json_init(lt_json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->count[0] = 0;
    j->keyed = 0;
}

/* The comma before a value or key that is not its container's first. */
static void before_value(lt_json *j)
{
    if (j->keyed) {
        j->keyed = 0;
        return;
    }
    if (j->count[j->depth]++)
        fputc(',', j->f);
}

void lt_json_open(lt_json *j, char c)
{
    before_value(j);
    fputc(c, j->f);
    if (j->depth + 1 < LT_JSON_DEPTH)
        j->depth++;
    j->count[j->depth] = 0;
}

void lt_json_close(lt_json *j, char c)
{
    fputc(c, j->f);
    if (j->depth > 0)
        j->depth--;
    if (j->depth == 0)
        fputc('\n', j->f);
}

void lt_json_key(lt_json *j, const char *key)
{
    before_value(j);
    lt_json_write_string(j->f, key);
    fputc(':', j->f);
    j->keyed = 1;
}

void lt_json_str(lt_json *j, const char *s)
{
    if (!s) {
        lt_json_null(j);
        return;
    }
    before_value(j);
    lt_json_write_string(j->f, s);
}

void lt_json_int(lt_json *j, int64_t v)
{
    before_value(j);
    fprintf(j->f, "%lld", (long long)v);
}

void lt_json_num(lt_json *j, double v)
{
    if (!isfinite(v)) {
        lt_json_null(j);
        return;
    }
    before_value(j);
    /* the shortest of 15 or 17 digits that reads back as v */
    char buf[32];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, j->f);
}

void lt_json_bool(lt_json *j, int v)
{
    before_value(j);
    fputs(v ? "true" : "false", j->f);
}

void lt_json_null(lt_json *j)
{
    before_value(j);
    fputs("null", j->f);
}
