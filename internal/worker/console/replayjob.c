/* replayjob.c - replays the console executes (replayjob.h). */
#include "replayjob.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amqp.h"
#include "archive.h"
#include "gauges.h"
#include "log.h"
#include "publisher.h"
#include "replaysend.h"
#include "requests.h"

#define CHUNK		100	/* claimed in one request */
#define RESULTS_MAX	1000	/* outcomes kept for the page, by id */

struct job {
	int64_t		 id;
	char		 actor[96];
	enum dlq_role	 role;
	struct dlq_replay_order o;	/* ids and texts: copies, owned */
	bool		 running;
	const char	*state;		/* running, done, failed, stopped,
					 * canary_failed */
	int64_t		 started_ms, ended_ms;
	int		 published, failed, unknown, refused, returned;
	char		 error[256];
	struct dlq_buf	 results;	/* ,{"id","outcome","detail"}... */
	int		 nresults;
};

struct dlq_replay_jobs {
	const struct dlq_config	*cfg;
	pthread_mutex_t		 mu;
	pthread_t		 thread;
	bool			 joinable, stop;
	int64_t			 next_id;
	struct job		 job;
};

struct dlq_replay_jobs *
dlq_replay_jobs_new(const struct dlq_config *c)
{
	struct dlq_replay_jobs *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	j->cfg = c;
	j->next_id = 1;
	pthread_mutex_init(&j->mu, NULL);
	dlq_buf_init(&j->job.results);
	return j;
}

static void
order_free(struct dlq_replay_order *o)
{
	free((void *)o->ids);
	free((void *)o->reason);
	free((void *)o->evidence);
	free((void *)o->to_exchange);
	free((void *)o->routing_key);
	memset(o, 0, sizeof(*o));
}

static char *
dup_or_null(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

void
dlq_replay_jobs_free(struct dlq_replay_jobs *j)
{
	if (j == NULL)
		return;
	pthread_mutex_lock(&j->mu);
	j->stop = true;
	pthread_mutex_unlock(&j->mu);
	if (j->joinable)
		pthread_join(j->thread, NULL);
	order_free(&j->job.o);
	dlq_buf_release(&j->job.results);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

static bool
stopping(struct dlq_replay_jobs *j)
{
	bool s;

	pthread_mutex_lock(&j->mu);
	s = j->stop;
	pthread_mutex_unlock(&j->mu);
	return s;
}

/* Runs `req` (freed) as the job's user; the parsed answer, or NULL with
 * why. */
static cJSON *
ask(struct dlq_replay_jobs *j, struct dlq_archive *a, cJSON *req, char *why,
    size_t n)
{
	struct dlq_buf out;
	char *line = cJSON_PrintUnformatted(req);
	cJSON *ans = NULL;
	const cJSON *e;

	cJSON_Delete(req);
	dlq_buf_init(&out);
	if (line != NULL) {
		dlq_requests_handle(j->cfg, a, line, strlen(line), j->job.role,
		    j->job.actor, -1, -1, &out);
		ans = cJSON_ParseWithLength(out.data ? out.data : "", out.len);
	}
	cJSON_free(line);
	dlq_buf_release(&out);
	if (ans != NULL && cJSON_IsTrue(cJSON_GetObjectItem(ans, "ok")))
		return ans;
	e = cJSON_GetObjectItem(ans, "error");
	snprintf(why, n, "%s", cJSON_IsString(e) ? e->valuestring :
	    "no answer");
	cJSON_Delete(ans);
	return NULL;
}

static void
result(struct job *job, int64_t id, const char *outcome, const char *detail)
{
	if (job->nresults >= RESULTS_MAX)
		return;
	dlq_buf_printf(&job->results, ",{\"id\":%lld,\"outcome\":",
	    (long long)id);
	dlq_buf_json_cstr(&job->results, outcome);
	dlq_buf_adds(&job->results, ",\"detail\":");
	dlq_buf_json_cstr(&job->results, detail);
	dlq_buf_addc(&job->results, '}');
	job->nresults++;
}

static void
pace(int64_t rate, int64_t start_ms, int sent)
{
	int64_t due, now = dlq_now_ms();
	struct timespec ts;

	if (rate <= 0)
		return;
	due = start_ms + (int64_t)sent * 1000 / rate;
	if (due > now) {
		ts.tv_sec = (due - now) / 1000;
		ts.tv_nsec = (long)((due - now) % 1000) * 1000000L;
		nanosleep(&ts, NULL);
	}
}

/* The options of a claim, as dlqctl's replay sends them. */
static void
add_options(cJSON *req, const struct dlq_replay_order *o)
{
	cJSON_AddStringToObject(req, "reason", o->reason);
	if (o->evidence != NULL)
		cJSON_AddStringToObject(req, "evidence", o->evidence);
	if (o->to_exchange != NULL)
		cJSON_AddStringToObject(req, "to_exchange", o->to_exchange);
	if (o->routing_key != NULL)
		cJSON_AddStringToObject(req, "routing_key", o->routing_key);
	if (o->force)
		cJSON_AddTrueToObject(req, "force");
	if (o->reset_retries)
		cJSON_AddTrueToObject(req, "reset_retries");
}

/* Records the outcomes of a chunk (`fin`, freed). */
static void
finish(struct dlq_replay_jobs *j, struct dlq_archive *a, cJSON *fin)
{
	cJSON *parts = dlq_replay_finish_split(fin, DLQ_CONTROL_REQUEST_MAX),
	    *part, *ans;
	char why[256];

	cJSON_Delete(fin);
	while ((part = cJSON_DetachItemViaPointer(parts, parts->child)) !=
	    NULL) {
		cJSON_AddStringToObject(part, "cmd", "replay_finish");
		if ((ans = ask(j, a, part, why, sizeof(why))) == NULL)
			dlq_log(DLQ_LOG_ERR, "console_replay_failed", "step",
			    "finish", "error", why, NULL);
		cJSON_Delete(ans);
	}
	cJSON_Delete(parts);
}

/* Claims, publishes and records ids[0..n): how many it settled (the
 * worker defers the last ones of a chunk of large messages). */
static int
chunk(struct dlq_replay_jobs *j, struct dlq_archive *a,
    struct dlq_publisher *pub, const int64_t *ids, int n, int64_t start_ms,
    int *sent)
{
	struct job *job = &j->job;
	cJSON *req = cJSON_CreateObject(), *ans, *fin, *res, *fids;
	const cJSON *data, *e;
	enum dlq_pub_outcome o;
	char detail[1024], why[256];
	int i, settled;

	cJSON_AddStringToObject(req, "cmd", "replay_claim");
	fids = cJSON_AddArrayToObject(req, "ids");
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(fids, cJSON_CreateNumber((double)ids[i]));
	add_options(req, &job->o);
	if ((ans = ask(j, a, req, why, sizeof(why))) == NULL) {
		pthread_mutex_lock(&j->mu);
		for (i = 0; i < n; i++) {
			job->refused++;
			result(job, ids[i], "refused", why);
		}
		pthread_mutex_unlock(&j->mu);
		return n;
	}
	data = cJSON_GetObjectItem(ans, "data");
	settled = n - cJSON_GetArraySize(cJSON_GetObjectItem(data, "deferred"));
	pthread_mutex_lock(&j->mu);
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(data, "refused")) {
		job->refused++;
		result(job, (int64_t)cJSON_GetObjectItem(e, "id")->valuedouble,
		    "refused", cJSON_GetObjectItem(e, "why")->valuestring);
	}
	pthread_mutex_unlock(&j->mu);
	fin = cJSON_CreateObject();
	fids = cJSON_AddArrayToObject(fin, "ids");
	res = cJSON_AddArrayToObject(fin, "results");
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(data, "claims")) {
		if (stopping(j)) {
			/* claimed, never sent: given back, replayable */
			o = DLQ_PUB_FAILED;
			snprintf(detail, sizeof(detail), "not sent: the worker "
			    "is stopping");
		} else if (dlq_publisher_blocked(pub)) {
			o = DLQ_PUB_FAILED;
			snprintf(detail, sizeof(detail), "not sent: the broker "
			    "blocks publishing");
		} else {
			pace(job->o.rate, start_ms, (*sent)++);
			o = dlq_replay_send(j->cfg, pub, e, job->o.reason,
			    job->o.reset_retries, detail, sizeof(detail));
		}
		dlq_replay_verdict(res, e, o, detail);
		cJSON_AddItemToArray(fids, cJSON_CreateNumber(
		    cJSON_GetObjectItem(e, "id")->valuedouble));
		pthread_mutex_lock(&j->mu);
		job->published += o == DLQ_PUB_OK;
		job->failed += o == DLQ_PUB_FAILED;
		job->unknown += o == DLQ_PUB_UNKNOWN;
		result(job, (int64_t)cJSON_GetObjectItem(e, "id")->valuedouble,
		    o == DLQ_PUB_OK ? "published" : o == DLQ_PUB_FAILED ?
		    "failed" : "unknown", detail);
		pthread_mutex_unlock(&j->mu);
	}
	if (cJSON_GetArraySize(res) > 0)
		finish(j, a, fin);
	else
		cJSON_Delete(fin);
	cJSON_Delete(ans);
	return settled > 0 ? settled : n;
}

/* Whether any of the canary's ids died again since `since_ms`. */
static int
canary_returned(struct dlq_replay_jobs *j, struct dlq_archive *a,
    int64_t since_ms, char *why, size_t n)
{
	const struct dlq_replay_order *o = &j->job.o;
	cJSON *req = cJSON_CreateObject(), *ids, *ans;
	int64_t i, back;

	cJSON_AddStringToObject(req, "cmd", "replay_returns");
	cJSON_AddNumberToObject(req, "since_at_ms", (double)since_ms);
	ids = cJSON_AddArrayToObject(req, "ids");
	for (i = 0; i < o->canary && i < o->n; i++)
		cJSON_AddItemToArray(ids,
		    cJSON_CreateNumber((double)o->ids[i]));
	if ((ans = ask(j, a, req, why, n)) == NULL)
		return -1;
	back = cJSON_GetArraySize(cJSON_GetObjectItem(ans, "data"));
	cJSON_Delete(ans);
	return (int)back;
}

static void
end(struct dlq_replay_jobs *j, const char *state, const char *error)
{
	struct dlq_buf line = { 0 };
	struct job *job = &j->job;

	pthread_mutex_lock(&j->mu);
	job->state = state;
	if (error != NULL)
		snprintf(job->error, sizeof(job->error), "%s", error);
	job->ended_ms = dlq_wall_ms();
	job->running = false;
	pthread_mutex_unlock(&j->mu);
	if (dlq_log_begin(&line, DLQ_LOG_INFO, "console_replay_done")) {
		dlq_log_int(&line, "job", job->id);
		dlq_log_str(&line, "by", job->actor);
		dlq_log_str(&line, "state", state);
		dlq_log_int(&line, "published", job->published);
		dlq_log_int(&line, "failed", job->failed);
		dlq_log_int(&line, "unknown", job->unknown);
		dlq_log_int(&line, "refused", job->refused);
		dlq_log_end(&line);
	}
	dlq_buf_release(&line);
}

static bool
watch(struct dlq_replay_jobs *j, int64_t ms)
{
	struct timespec ts = { 0, 100 * 1000000L };
	int64_t until = dlq_now_ms() + ms;

	while (dlq_now_ms() < until)
		if (stopping(j))
			return false;
		else
			nanosleep(&ts, NULL);
	return true;
}

static void *
run(void *arg)
{
	struct dlq_replay_jobs *j = arg;
	struct job *job = &j->job;
	struct dlq_archive *a;
	struct dlq_publisher *pub = NULL;
	int64_t start_ms = dlq_now_ms(), canary_at = 0;
	int i = 0, k, sent = 0, back;
	char why[256];

	if ((a = dlq_archive_open(j->cfg)) == NULL) {
		end(j, "failed", "the archive does not open");
		return NULL;
	}
	dlq_archive_busy_timeout(a, 5000);
	if ((pub = dlq_publisher_open(j->cfg, "dlq-worker console replay", why,
	    sizeof(why))) == NULL) {
		dlq_archive_close(a);
		end(j, "failed", why);
		return NULL;
	}
	while (i < job->o.n && !stopping(j)) {
		if (job->o.canary > 0 && i == job->o.canary && job->o.canary <
		    job->o.n) {
			if (!watch(j, job->o.canary_watch_ms))
				break;
			if ((back = canary_returned(j, a, canary_at, why,
			    sizeof(why))) != 0) {
				pthread_mutex_lock(&j->mu);
				job->returned = back > 0 ? back : 0;
				pthread_mutex_unlock(&j->mu);
				dlq_publisher_close(pub);
				dlq_archive_close(a);
				end(j, back > 0 ? "canary_failed" : "failed",
				    back > 0 ? "canary messages died again; "
				    "the rest was not sent" : why);
				return NULL;
			}
		}
		if (i == 0)
			canary_at = dlq_wall_ms();
		k = job->o.n - i < CHUNK ? job->o.n - i : CHUNK;
		if (job->o.canary > 0 && i < job->o.canary && i + k >
		    job->o.canary)
			k = (int)job->o.canary - i;
		i += chunk(j, a, pub, job->o.ids + i, k, start_ms, &sent);
	}
	dlq_publisher_close(pub);
	dlq_archive_close(a);
	end(j, i < job->o.n ? "stopped" : "done", i < job->o.n ? "the worker "
	    "stopped; the rest was not sent" : NULL);
	return NULL;
}

int64_t
dlq_replay_job_start(struct dlq_replay_jobs *j,
    const struct dlq_replay_order *o, const char *actor, enum dlq_role role,
    char *why, size_t n)
{
	struct job *job = &j->job;
	int64_t *ids;

	pthread_mutex_lock(&j->mu);
	if (job->running) {
		snprintf(why, n, "replay %lld of %s is running; one at a time",
		    (long long)job->id, job->actor);
		pthread_mutex_unlock(&j->mu);
		return 0;
	}
	pthread_mutex_unlock(&j->mu);
	if (j->joinable)
		pthread_join(j->thread, NULL);
	j->joinable = false;
	order_free(&job->o);
	dlq_buf_reset(&job->results);
	if ((ids = calloc((size_t)(o->n > 0 ? o->n : 1),
	    sizeof(*ids))) == NULL) {
		snprintf(why, n, "out of memory");
		return 0;
	}
	memcpy(ids, o->ids, (size_t)o->n * sizeof(*ids));
	job->o = *o;
	job->o.ids = ids;
	job->o.reason = dup_or_null(o->reason);
	job->o.evidence = dup_or_null(o->evidence);
	job->o.to_exchange = dup_or_null(o->to_exchange);
	job->o.routing_key = dup_or_null(o->routing_key);
	job->id = j->next_id++;
	snprintf(job->actor, sizeof(job->actor), "%s", actor);
	job->role = role;
	job->running = true;
	job->state = "running";
	job->started_ms = dlq_wall_ms();
	job->ended_ms = 0;
	job->published = job->failed = job->unknown = job->refused = 0;
	job->returned = job->nresults = 0;
	job->error[0] = '\0';
	if (pthread_create(&j->thread, NULL, run, j) != 0) {
		job->running = false;
		job->state = "failed";
		snprintf(why, n, "no thread for the replay");
		return 0;
	}
	j->joinable = true;
	dlq_log(DLQ_LOG_INFO, "console_replay_started", "by", actor, NULL);
	return job->id;
}

bool
dlq_replay_job_json(struct dlq_replay_jobs *j, int64_t id, struct dlq_buf *out)
{
	struct job *job = &j->job;

	pthread_mutex_lock(&j->mu);
	if (id != job->id || job->state == NULL) {
		pthread_mutex_unlock(&j->mu);
		return false;
	}
	dlq_buf_printf(out, "{\"id\":%lld,\"by\":", (long long)job->id);
	dlq_buf_json_cstr(out, job->actor);
	dlq_buf_adds(out, ",\"state\":");
	dlq_buf_json_cstr(out, job->state);
	dlq_buf_printf(out, ",\"started_at\":%lld,\"ended_at\":",
	    (long long)job->started_ms);
	if (job->ended_ms)
		dlq_buf_printf(out, "%lld", (long long)job->ended_ms);
	else
		dlq_buf_adds(out, "null");
	dlq_buf_printf(out, ",\"selected\":%d,\"published\":%d,\"failed\":%d,"
	    "\"unknown\":%d,\"refused\":%d,\"canary\":%lld,"
	    "\"canary_returned\":%d,\"error\":", job->o.n, job->published,
	    job->failed, job->unknown, job->refused, (long long)job->o.canary,
	    job->returned);
	dlq_buf_json_cstr(out, job->error[0] ? job->error : NULL);
	dlq_buf_adds(out, ",\"results\":[");
	if (job->results.len > 1)
		dlq_buf_add(out, job->results.data + 1, job->results.len - 1);
	dlq_buf_adds(out, "]}");
	pthread_mutex_unlock(&j->mu);
	return true;
}
