/* confint.h - integers of a libconfig file, as written.
 *
 * libconfig 1.5 (Debian 12) reads an integer literal without an L suffix
 * as 32 bits and keeps only its low 32 bits: `cooldown_ms = 4295267296`
 * arrives as 300000, in range, and would be accepted. These helpers read
 * the literal back from the setting's line in its file and return what was
 * written, so that a number too large is refused, never wrapped. */
#ifndef DLQ_CONFINT_H
#define DLQ_CONFINT_H

#include <libconfig.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value of integer setting `s` as written in `path` (the file it was
 * read from; NULL for a string: libconfig's value is then kept). True
 * with `*v` set; false when the literal does not fit in 64 bits. `text`
 * (may be NULL) receives the literal, or libconfig's value when the
 * literal could not be found on the setting's line. */
bool	dlq_confint_get(const config_setting_t *s, const char *path,
	    int64_t *v, char *text, size_t textlen);

/* Looks for `name = literal` (or `name: literal`) on `line` whose value
 * agrees with libconfig's `lib` in its low 32 bits (all 64 when `wide`).
 * Pure, for the tests. 1: found, `*v` set; 0: not found; -1: found, but
 * the literal does not fit in 64 bits. `text` receives the literal. */
int	dlq_confint_scan(const char *line, const char *name, int64_t lib,
	    bool wide, int64_t *v, char *text, size_t textlen);

/* Whether setting `name` counts milliseconds (ends in "_ms"): a value
 * written as a duration ("5m") is then explained. */
bool	dlq_confint_in_ms(const char *name);

#endif
