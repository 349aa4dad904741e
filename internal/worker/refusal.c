/* refusal.c - why a change left a record as it was (refusal.h). */
#include "refusal.h"

#include <stdio.h>
#include <string.h>

const char *
dlq_refusal(char *buf, size_t n, const char *status, bool reopen,
    const char *outcome)
{
	if (!reopen || strcmp(status, "discarded") != 0)
		snprintf(buf, n, "status is %s", status);
	else if (outcome != NULL)
		snprintf(buf, n, "a replay of it was %s: it stays closed, a "
		    "second one could send it twice", strcmp(outcome,
		    "published") == 0 ? "published" : "sent with its outcome "
		    "unknown");
	else
		snprintf(buf, n, "its payload was purged: nothing is left to "
		    "replay");
	return buf;
}
