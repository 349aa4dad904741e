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

const char *
dlq_class_next_step(const char *class)
{
	static const char *const steps[][2] = {
		{ "transient", "replay once the dependency is back" },
		{ "rate_limited", "slow the producer, then replay" },
		{ "validation", "fix the payload or its producer; do not replay "
		    "as is" },
		{ "configuration", "fix the consumer's configuration, then "
		    "replay" },
		{ "contract", "align producer and consumer on the message "
		    "schema" },
		{ "security", "check credentials and permissions; never "
		    "replay blindly" },
		{ "expired", "resend fresh or drop; a replay is stale" },
		{ "manual", "needs an owner's decision" },
		{ "unknown", "inspect payload and consumer logs" },
	};
	size_t i;

	for (i = 0; class != NULL && i < sizeof(steps) / sizeof(steps[0]); i++)
		if (strcmp(steps[i][0], class) == 0)
			return steps[i][1];
	return NULL;
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
