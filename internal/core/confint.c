/* confint.c - integers of a libconfig file, as written (see confint.h). */
#include "confint.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A character of a libconfig setting name: [A-Za-z*][-A-Za-z0-9_*]* */
static bool
name_char(char ch)
{
	return isalnum((unsigned char)ch) || ch == '_' || ch == '-' ||
	    ch == '*';
}

int
dlq_confint_scan(const char *line, const char *name, int64_t lib,
    bool wide, int64_t *v, char *text, size_t textlen)
{
	size_t n = strlen(name);
	const char *p, *q, *lit;
	long long x;
	char *end;
	int base;

	for (p = line; n > 0 && (p = strstr(p, name)) != NULL; p += n) {
		if ((p > line && name_char(p[-1])) || name_char(p[n]))
			continue;
		q = p + n + strspn(p + n, " \t");
		if (*q != '=' && *q != ':')
			continue;
		lit = q + 1 + strspn(q + 1, " \t");
		q = lit + (*lit == '+' || *lit == '-');
		if (!isdigit((unsigned char)*q))
			continue;
		/* libconfig reads 0x... as hex, anything else as decimal */
		base = q[0] == '0' && (q[1] == 'x' || q[1] == 'X') ? 16 : 10;
		errno = 0;
		x = strtoll(lit, &end, base);
		if (errno != ERANGE && !(wide ? x == lib :
		    (uint32_t)x == (uint32_t)lib))
			continue;	/* another setting of that name */
		snprintf(text, textlen, "%.*s", (int)(end - lit), lit);
		if (errno == ERANGE)
			return -1;
		*v = x;
		return 1;
	}
	return 0;
}

bool
dlq_confint_get(const config_setting_t *s, const char *path, int64_t *v,
    char *text, size_t textlen)
{
	const char *file = config_setting_source_file(s);
	const char *name = config_setting_name(s);
	unsigned line = config_setting_source_line(s), k = 0;
	char lit[64], *buf = NULL;
	size_t cap = 0;
	FILE *f;
	int rc = 0;

	*v = config_setting_get_int64(s);
	snprintf(lit, sizeof(lit), "%lld", (long long)*v);
	if (file == NULL)
		file = path;
	if (file != NULL && name != NULL && line > 0 &&
	    (f = fopen(file, "r")) != NULL) {
		while (getline(&buf, &cap, f) != -1)
			if (++k == line) {
				rc = dlq_confint_scan(buf, name, *v,
				    config_setting_type(s) == CONFIG_TYPE_INT64, v,
				    lit, sizeof(lit));
				break;
			}
		free(buf);
		fclose(f);
	}
	if (text != NULL)
		snprintf(text, textlen, "%s", lit);
	return rc != -1;
}

bool
dlq_confint_in_ms(const char *name)
{
	size_t n = strlen(name);

	return n > 3 && strcmp(name + n - 3, "_ms") == 0;
}
