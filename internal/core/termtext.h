/* termtext.h - text from the archive, written for a terminal.
 *
 * Producers set message ids, error headers and payloads; another
 * operator writes reasons and evidence. Written to a terminal as they
 * are, an escape sequence in one of them could clear the operator's
 * screen, retitle the window or hide the lines around it, and a
 * direction override could show "gnp.exe" for "exe.png" or an id
 * backwards. Here control characters (C0, DEL, C1) and bytes that are
 * not UTF-8 are shown escaped (\n, \t, \r, \e, \xNN), invisible
 * characters (direction controls, zero-width spaces) as \uNNNN, and
 * widths count columns (two for a wide character, none for a combining
 * mark), so that tables stay aligned whatever the text. */
#ifndef DLQ_TERMTEXT_H
#define DLQ_TERMTEXT_H

#include <stdbool.h>
#include <stdio.h>

#include "buf.h"

/* The columns `s` takes once escaped. */
int	dlq_term_width(const char *s);

/* Writes `s` escaped, at most `max` columns (max < 0: no limit; a cut
 * text ends in "…", which takes the last column), then spaces up to
 * `pad` columns. Returns the columns written. */
int	dlq_term_put(FILE *, const char *s, int max, int pad);

/* Writes a text of many lines (a payload) escaped, with its newlines and
 * tabs kept as they are. */
void	dlq_term_put_lines(FILE *, const char *s);

/* Appends `s` escaped, on one line, to `b` (a configuration error's
 * value). */
void	dlq_term_add(struct dlq_buf *b, const char *s);

/* The room an escape of dlq_term_invisible takes, its end included. */
#define DLQ_TERM_ESC_MAX	11

/* The bytes of the invisible character `s` starts with, else 0; its
 * escape (\uNNNN, or \UNNNNNNNN past U+FFFF) in `esc`. Invisible: the
 * direction controls (the marks ALM, LRM and RLM, the embeddings and
 * overrides U+202A-U+202E, the isolates U+2066-U+2069: they reorder the
 * text around them), the zero-width space, word joiner and no-break
 * space (BOM), the soft hyphen, the line and paragraph separators and
 * the tag characters U+E0000-U+E007F (an id with one looks like another
 * without it, a hidden text rides in the tags). The digests show them
 * escaped too. */
size_t	dlq_term_invisible(const unsigned char *s,
	    char esc[DLQ_TERM_ESC_MAX]);

/* Whether `s` holds a control character (C0 or DEL), or a space when
 * `spaces` is true: in a URL, a queue name or its suffix it is a paste's
 * leftover (a trailing newline) that the broker or curl would refuse
 * later, or a name nobody can type. */
bool	dlq_term_has_control(const char *s, bool spaces);

#endif
