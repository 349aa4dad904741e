/* duration.c - durations read and written as people do (duration.h). */
#include "duration.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t
dlq_parse_duration(const char *s)
{
	static const struct { const char *unit; int64_t ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
		{ "d", 86400000 }, { "w", 604800000 },
	};
	char *end;
	long long v;
	size_t i;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	/* a number too large for any integer (strtoll gives LLONG_MAX) is
	 * too long with its unit, not malformed */
	if ((errno != 0 && !(errno == ERANGE && v == LLONG_MAX)) || v < 0)
		return -1;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].unit) == 0)
			return v > DLQ_DURATION_MAX_MS / units[i].ms ?
			    DLQ_DURATION_TOO_LONG : v * units[i].ms;
	return -1;
}

const char *
dlq_format_duration(int64_t ms, char *out, size_t n)
{
	static const struct { const char *unit; int64_t ms; } units[] = {
		{ "d", 86400000 }, { "h", 3600000 }, { "m", 60000 },
		{ "s", 1000 },
	};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (ms > 0 && ms % units[i].ms == 0) {
			snprintf(out, n, "%lld%s", (long long)(ms / units[i].ms),
			    units[i].unit);
			return out;
		}
	snprintf(out, n, "%lldms", (long long)ms);
	return out;
}

const char *
dlq_format_age(int64_t ms, char *out, size_t n)
{
	int64_t s = ms / 1000;

	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(out, n, "%llds", (long long)s);
	else if (s < 7200)
		snprintf(out, n, "%lldm", (long long)s / 60);
	else if (s < 172800)
		snprintf(out, n, "%lldh", (long long)s / 3600);
	else
		snprintf(out, n, "%lldd", (long long)s / 86400);
	return out;
}
