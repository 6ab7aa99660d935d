/* A small streaming JSON writer for the commands' --json output (cli/json.c).
 * Strings are written as JSON wants them whatever bytes they hold (names in
 * an ONNX file are arbitrary bytes): quote, backslash and control characters
 * (U+0000-U+001F, U+007F) are escaped, valid UTF-8 is kept as it is, and
 * every byte that is not part of a valid UTF-8 sequence (overlong forms,
 * surrogates and code points past U+10FFFF included) becomes U+FFFD, written
 * as \ufffd. */
#ifndef LT_CLI_JSON_H
#define LT_CLI_JSON_H

#include <stdint.h>
#include <stdio.h>

#define LT_JSON_DEPTH 16

typedef struct lt_json {
    FILE *f;
    int depth;
    int count[LT_JSON_DEPTH]; /* values written so far at each depth */
    int keyed;                /* a key was written; its value comes next */
} lt_json;

void lt_json_init(lt_json *j, FILE *f);
/* '{' or '['; as a value of the current container (after a key in an object). */
void lt_json_open(lt_json *j, char c);
/* Closes the innermost container ('}' or ']'); at depth 0 ends the line. */
void lt_json_close(lt_json *j, char c);
void lt_json_key(lt_json *j, const char *key);
void lt_json_str(lt_json *j, const char *s); /* NULL writes null */
void lt_json_int(lt_json *j, int64_t v);
void lt_json_num(lt_json *j, double v); /* NaN and infinities write null */
void lt_json_bool(lt_json *j, int v);
void lt_json_null(lt_json *j);

/* Writes s as a JSON string literal (quotes included) by the rules above. */
void lt_json_write_string(FILE *f, const char *s);

#endif
