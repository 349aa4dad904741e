/* suggest.h - "did you mean": the known word nearest to a mistyped one.
 *
 * A setting, command, option or queue typed with a slip (webhook_formt,
 * lst, --exectue, leave_evnt) or without its unit (max_age for
 * max_age_ms) is refused together with the word most likely meant, so
 * the fix is one look away. Pure, no allocation, any thread. */
#ifndef DLQ_SUGGEST_H
#define DLQ_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

/* How near `known` (its first `len` bytes) is to `typed`, case ignored:
 * 0 for the same word, else the edits that make one of the other (a
 * character inserted, dropped or changed, or two neighbours swapped:
 * at most 1 for words of up to 4 characters, 2 for longer ones), or 3
 * for a word that begins or ends with the typed one (3 characters or
 * more: max_age in max_age_ms, format in webhook_format). -1 when it is
 * not near: not what was meant. */
int		 dlq_suggest_distance(const char *typed, const char *known,
		    size_t len);

/* The nearest word so far, of those considered; `word` NULL: none is
 * near. Start from DLQ_SUGGESTION_NONE. */
struct dlq_suggestion {
	const char	*word;
	size_t		 len;
	int		 distance;
};

#define DLQ_SUGGESTION_NONE	{ NULL, 0, -1 }

/* Keeps `known` (its first `len` bytes) in `s` when it is near `typed`
 * and nearer than the word `s` holds (the first of equals stays); true
 * when it did. */
bool		 dlq_suggest_consider(struct dlq_suggestion *s,
		    const char *typed, const char *known, size_t len);

/* The nearest of `words` (NULL-terminated; the first of equals) to
 * `typed`, or NULL when none is near. */
const char	*dlq_suggest(const char *typed, const char *const *words);

/* Whether `s` is exactly one of `words` (NULL-terminated). */
bool		 dlq_word_known(const char *s, const char *const *words);

#endif
