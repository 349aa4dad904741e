/* proto.c - the control protocol's names and the reading of request
 * fields, shared by dlq-worker and dlqctl. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"
#include "suggest.h"

static const char *const result_names[] = { "ok", "usage", "not_found",
	"refused", "error", "permission" };

static const int result_exits[] = { DLQ_EXIT_OK, DLQ_EXIT_USAGE,
	DLQ_EXIT_ERROR, DLQ_EXIT_CONFLICT, DLQ_EXIT_ERROR,
	DLQ_EXIT_PERMISSION };

static const char *const role_names[] = { "none", "viewer", "operator",
	"admin" };

const char *const dlq_status_names[] = { "open", "assigned", "replaying",
	"replayed", "discarded", NULL };

const char *
dlq_result_name(enum dlq_result r)
{
	return (unsigned)r < sizeof(result_names) / sizeof(result_names[0]) ?
	    result_names[r] : "error";
}

enum dlq_result
dlq_result_parse(const char *name)
{
	size_t i;

	for (i = 0; name != NULL &&
	    i < sizeof(result_names) / sizeof(result_names[0]); i++)
		if (strcmp(name, result_names[i]) == 0)
			return (enum dlq_result)i;
	return DLQ_ERROR;
}

int
dlq_result_exit(enum dlq_result r)
{
	return (unsigned)r < sizeof(result_exits) / sizeof(result_exits[0]) ?
	    result_exits[r] : DLQ_EXIT_ERROR;
}

const char *
dlq_role_name(enum dlq_role r)
{
	return (unsigned)r < sizeof(role_names) / sizeof(role_names[0]) ?
	    role_names[r] : "none";
}

enum dlq_role
dlq_role_parse(const char *s)
{
	if (strcmp(s, "viewer") == 0)
		return DLQ_ROLE_VIEWER;
	if (strcmp(s, "operator") == 0)
		return DLQ_ROLE_OPERATOR;
	if (strcmp(s, "admin") == 0)
		return DLQ_ROLE_ADMIN;
	return DLQ_ROLE_NONE;
}

bool
dlq_status_valid(const char *s)
{
	return dlq_word_known(s, dlq_status_names);
}

const char *
dlq_json_text(const cJSON *v)
{
	if (!cJSON_IsString(v) ||
	    v->valuestring[strspn(v->valuestring, " \t\r\n")] == '\0')
		return NULL;
	return v->valuestring;
}

bool
dlq_json_int(const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return false;
	d = v->valuedouble;
	/* range first: converting an out-of-range double is undefined */
	if (!(d >= (double)min && d <= (double)max) || d != floor(d))
		return false;
	*out = (int64_t)d;
	return true;
}

bool
dlq_json_text_fits(const cJSON *req, const char *key, char *why, size_t n)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
	    req, key));

	if (s == NULL || strlen(s) <= DLQ_CONTROL_TEXT_MAX)
		return true;
	snprintf(why, n, "'%s' is too long: %zu bytes, at most %d", key,
	    strlen(s), DLQ_CONTROL_TEXT_MAX);
	return false;
}
