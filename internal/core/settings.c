/* settings.c - string lists and the error classes (settings.h). */
#include "settings.h"

#include <stdlib.h>
#include <string.h>

#include "suggest.h"

const char *const dlq_class_names[] = { "transient", "rate_limited",
	"validation", "configuration", "contract", "security", "expired",
	"manual", "unknown", NULL };

bool
dlq_class_valid(const char *s)
{
	return dlq_word_known(s, dlq_class_names);
}

void
dlq_strlist_release(struct dlq_strlist *l)
{
	size_t i;

	if (l == NULL || l->v == NULL)
		return;
	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void
dlq_strlist_json(const struct dlq_strlist *l, struct dlq_buf *out)
{
	size_t i;

	dlq_buf_addc(out, '[');
	for (i = 0; i < l->n; i++) {
		if (i > 0)
			dlq_buf_addc(out, ',');
		dlq_buf_json_cstr(out, l->v[i]);
	}
	dlq_buf_addc(out, ']');
}

bool
dlq_strlist_contains(const struct dlq_strlist *l, const char *s)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}
