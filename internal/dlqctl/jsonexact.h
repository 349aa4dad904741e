/* jsonexact.h - whole numbers through cJSON without rounding.
 *
 * cJSON keeps a number as a double, which holds an integer exactly only
 * up to 2^53: a header with a 64-bit id (a snowflake id, a time in
 * nanoseconds) read from the worker's answer would print as
 * 1.7964920740072038e+18. dlqctl keeps the literal of each such integer
 * next to its double (in the item's otherwise unused valuestring) and
 * prints it as written. Pure: no I/O. */
#ifndef DLQ_JSONEXACT_H
#define DLQ_JSONEXACT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* Keeps, in each number of `tree` parsed from text[0..n), the literal
 * of an integer of 16 digits or more. False, and none kept, when the
 * text and the tree do not match number for number, or on no memory. */
bool	dlq_json_keep_integers(cJSON *tree, const char *text, size_t n);

/* The literal kept for a number item, or NULL (then its double is
 * exact enough). */
const char *dlq_json_literal(const cJSON *item);

/* `v` printed unformatted, kept integers as written; free with
 * cJSON_free. NULL on no memory. */
char	*dlq_json_print(const cJSON *v);

#endif
