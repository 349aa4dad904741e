/* suggest.c - the known word nearest to a mistyped one (see suggest.h). */
#include "suggest.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* Longer words are not compared: no name we know is that long. */
#define WORD_MAX	64
#define AFFIX		3	/* the distance of a word that holds it */

static int
lower(char c)
{
	return tolower((unsigned char)c);
}

static int
min3(int a, int b, int c)
{
	int m = a < b ? a : b;

	return m < c ? m : c;
}

/* Edits from a to b (Damerau-Levenshtein, each transposition of two
 * neighbours counting once: "exectue"), case ignored. Three rows. */
static int
edits(const char *a, size_t n, const char *b, size_t m)
{
	int d[3][WORD_MAX + 1], *row, *up, *up2;
	size_t i, j;

	for (j = 0; j <= m; j++)
		d[0][j] = (int)j;
	for (i = 1; i <= n; i++) {
		row = d[i % 3];
		up = d[(i - 1) % 3];
		up2 = d[(i + 1) % 3];	/* i - 2 */
		row[0] = (int)i;
		for (j = 1; j <= m; j++) {
			row[j] = min3(up[j] + 1, row[j - 1] + 1, up[j - 1] +
			    (lower(a[i - 1]) != lower(b[j - 1])));
			if (i > 1 && j > 1 && lower(a[i - 1]) ==
			    lower(b[j - 2]) && lower(a[i - 2]) ==
			    lower(b[j - 1]) && up2[j - 2] + 1 < row[j])
				row[j] = up2[j - 2] + 1;
		}
	}
	return d[n % 3][m];
}

int
dlq_suggest_distance(const char *typed, const char *known, size_t len)
{
	size_t n = strlen(typed);
	int e;

	if (n == 0 || n > WORD_MAX || len == 0 || len > WORD_MAX)
		return -1;
	if ((e = edits(typed, n, known, len)) <= (n <= 4 ? 1 : 2))
		return e;
	if (n >= 3 && n < len && (strncasecmp(known, typed, n) == 0 ||
	    strncasecmp(known + len - n, typed, n) == 0))
		return AFFIX;
	return -1;
}

bool
dlq_suggest_consider(struct dlq_suggestion *s, const char *typed,
    const char *known, size_t len)
{
	int d = dlq_suggest_distance(typed, known, len);

	if (d < 0 || (s->distance >= 0 && d >= s->distance))
		return false;
	s->word = known;
	s->len = len;
	s->distance = d;
	return true;
}

const char *
dlq_suggest(const char *typed, const char *const *words)
{
	struct dlq_suggestion s = DLQ_SUGGESTION_NONE;

	for (; *words != NULL; words++)
		dlq_suggest_consider(&s, typed, *words, strlen(*words));
	return s.word;
}

bool
dlq_word_known(const char *s, const char *const *words)
{
	for (; *words != NULL; words++)
		if (strcmp(*words, s) == 0)
			return true;
	return false;
}
