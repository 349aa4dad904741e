/* check_console.c - the web console and its HTTP API against the real
 * worker and broker: who may ask what, the answers the OpenAPI file
 * describes, the errors, sessions and CSRF, the trusted proxy, conditional
 * requests, a replay executed by the worker, the digest's links, and the
 * page in a real headless Chromium (tests/browser/console.mjs). */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check_main.h"
#include "buf.h"
#include "harness.h"

#define WAIT_MS	20000
#define MARKER	"PAYLOAD-MARKER-7f3a"	/* in every payload, nowhere else */

struct user {
	char	 token[64];
	char	 line[160];
};

struct fixture {
	struct h_rig	 rig;
	char		 base[64];
	struct user	 op, viewer, admin;
	int64_t		 evil, ids[4];	/* ids[0..2]: q0, newest last */
};

struct reply {
	long		 status;
	struct dlq_buf	 body, headers;
	cJSON		*json;
};

/* A request's parts; NULL ones are left out. */
struct call {
	const char	*method, *path, *token, *cookie, *csrf, *type, *body;
	const char	*header;	/* one more, "Name: value" */
	const char	*source;	/* local address to send from */
};

static size_t
collect(char *p, size_t size, size_t n, void *arg)
{
	dlq_buf_add(arg, p, size * n);
	return size * n;
}

static void
reply_free(struct reply *r)
{
	dlq_buf_release(&r->body);
	dlq_buf_release(&r->headers);
	cJSON_Delete(r->json);
	memset(r, 0, sizeof(*r));
}

static long
http(const struct fixture *f, const struct call *c, struct reply *r)
{
	struct curl_slist *hs = NULL;
	char url[512], line[256];
	CURL *h = curl_easy_init();

	memset(r, 0, sizeof(*r));
	dlq_buf_init(&r->body);
	dlq_buf_init(&r->headers);
	snprintf(url, sizeof(url), "%s%s", f->base, c->path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method ? c->method : "GET");
	if (c->body != NULL)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
	if (c->token != NULL) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", c->token);
		hs = curl_slist_append(hs, line);
	}
	if (c->cookie != NULL) {
		snprintf(line, sizeof(line), "Cookie: %s", c->cookie);
		hs = curl_slist_append(hs, line);
	}
	if (c->csrf != NULL) {
		snprintf(line, sizeof(line), "X-CSRF-Token: %s", c->csrf);
		hs = curl_slist_append(hs, line);
	}
	snprintf(line, sizeof(line), "Content-Type: %s", c->type ? c->type :
	    "application/json");
	hs = curl_slist_append(hs, line);
	if (c->header != NULL)
		hs = curl_slist_append(hs, c->header);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hs);
	if (c->source != NULL)
		curl_easy_setopt(h, CURLOPT_INTERFACE, c->source);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r->body);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &r->headers);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(hs);
	curl_easy_cleanup(h);
	r->json = cJSON_ParseWithLength(r->body.data ? r->body.data : "",
	    r->body.len);
	return r->status;
}

/* GET `path` as the bearer of `token`. */
static long
get(const struct fixture *f, const char *token, const char *path,
    struct reply *r)
{
	struct call c = { .path = path, .token = token };

	return http(f, &c, r);
}

/* POST `body` to `path` as the bearer of `token`. */
static long
post(const struct fixture *f, const char *token, const char *path,
    const char *body, struct reply *r)
{
	struct call c = { .method = "POST", .path = path, .token = token,
	    .body = body };

	return http(f, &c, r);
}

/* The value of response header `name` (static), "" when absent. */
static const char *
header(const struct reply *r, const char *name)
{
	static char v[256];
	const char *p = r->headers.data ? r->headers.data : "";
	size_t n = strlen(name), k;

	v[0] = '\0';
	for (; *p != '\0'; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "")
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			p += n + 1;
			p += strspn(p, " ");
			k = strcspn(p, "\r\n");
			snprintf(v, sizeof(v), "%.*s", (int)k, p);
			break;
		}
	return v;
}

static const char *
code(const struct reply *r)
{
	return h_jstr(r->json, "code");
}

static void
make_user(struct fixture *f, struct user *u, const char *name,
    const char *role)
{
	const char *argv[] = { h_bin("dlqctl"), "-c", f->rig.cfg, "--json",
	    "console", "token", name, role, NULL };
	char *out = NULL;
	cJSON *j;

	ck_assert_int_eq(h_run(argv, NULL, &out), 0);
	ck_assert_ptr_nonnull(j = cJSON_Parse(out));
	snprintf(u->token, sizeof(u->token), "%s", h_jstr(j, "token"));
	snprintf(u->line, sizeof(u->line), "%s %s %s\n", name, role,
	    h_jstr(j, "sha256"));
	ck_assert_int_eq(strlen(u->token), 43);
	cJSON_Delete(j);
	free(out);
}

/* One message dies in queue q with `body` and `headers` (may be NULL);
 * its archive id. */
static int64_t
die(struct fixture *f, int q, const char *mid, const char *body,
    const amqp_table_t *headers)
{
	h_publish(f->rig.c, f->rig.exch, f->rig.q[q], body, strlen(body), mid,
	    headers);
	ck_assert_int_eq(h_reject(f->rig.c, f->rig.q[q], 1, WAIT_MS), 1);
	return h_archived(&f->rig.w, mid, 1, WAIT_MS);
}

/* A rig with console users alice (operator), vic (viewer) and ada
 * (admin), `extra` settings more, and five dead letters: the evil one
 * (markup in its payload, headers, error and message id), three more in
 * q0 and one in q1. */
static void
start(struct fixture *f, const char *extra)
{
	char conf[1024], tokens[512], mid[96];
	amqp_table_entry_t e[4];
	amqp_table_t hs = { 4, e };
	int port = h_free_port(), i;

	h_rig_name(&f->rig, "cn", 2);
	snprintf(f->base, sizeof(f->base), "http://127.0.0.1:%d", port);
	/* the users first: dlqctl console token reads the config */
	snprintf(conf, sizeof(conf), "http = { listen = \"127.0.0.1:%d\"; };\n",
	    port);
	h_rig_setup(&f->rig, conf);
	make_user(f, &f->op, "alice", "operator");
	make_user(f, &f->viewer, "vic", "viewer");
	make_user(f, &f->admin, "ada", "admin");
	h_close(f->rig.c);	/* set up again below, with the users */
	snprintf(tokens, sizeof(tokens), "# console users\n%s%s%s", f->op.line,
	    f->viewer.line, f->admin.line);
	snprintf(conf, sizeof(conf), "http = { listen = \"127.0.0.1:%d\"; };\n"
	    "console = { tokens_file = \"%s\"; public_url = "
	    "\"http://console.example/\"; trusted_proxies = (\"127.0.0.1\"); "
	    "proxy_user_header = \"X-Forwarded-User\"; };\n%s", port,
	    h_write_file("tokens", tokens), extra ? extra : "");
	h_rig_setup(&f->rig, conf);
	h_rig_start(&f->rig);
	ck_assert(h_wait_listening(port, WAIT_MS));
	e[0] = h_str_entry("x-error", "<img src=x onerror=window.__pwned=3> "
	    "failed");
	e[1] = h_str_entry("x-link", "javascript:window.__pwned=4");
	e[2] = h_str_entry("x-file", "\xe2\x80\xaegnp.exe");
	e[3] = h_str_entry("x-html", "<a href=\"javascript:alert(5)\">x</a>");
	snprintf(mid, sizeof(mid), "%s-<b>evil</b>", f->rig.prefix);
	f->evil = die(f, 0, mid, "{\"note\":\"<script>window.__pwned=1"
	    "</script><img src=x onerror=\\\"window.__pwned=2\\\">\","
	    "\"m\":\"" MARKER "\"}", &hs);
	for (i = 0; i < 3; i++) {
		snprintf(mid, sizeof(mid), "%s-plain-%d", f->rig.prefix, i);
		f->ids[i] = die(f, 0, mid, "{\"order\":1,\"m\":\"" MARKER "\"}",
		    NULL);
	}
	snprintf(mid, sizeof(mid), "%s-other", f->rig.prefix);
	f->ids[3] = die(f, 1, mid, "{\"m\":\"" MARKER "\"}", NULL);
}

/* How many items the list at `path` answers to the bearer of `token`
 * (which must get 200). */
static int
items(const struct fixture *f, const char *token, const char *path)
{
	struct reply r;
	int n;

	ck_assert_int_eq(get(f, token, path, &r), 200);
	n = cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "data"));
	reply_free(&r);
	return n;
}

START_TEST(nobody_gets_past_the_door_without_a_user)
{
	static const char *const paths[] = { "/api/v1/me",
	    "/api/v1/dead-letters", "/api/v1/dead-letters/1", "/api/v1/stats",
	    "/api/v1/groups", "/api/v1/audit", "/api/v1/redrive",
	    "/api/v1/topology", "/api/v1/replays/1", "/api/v1/nothing" };
	struct fixture f;
	struct reply r;
	struct call c = { .method = "POST", .path = "/api/v1/dead-letters/drop",
	    .body = "{\"ids\":[1],\"reason\":\"x\"}" };
	size_t i;
	int before;

	start(&f, NULL);
	before = items(&f, f.admin.token, "/api/v1/audit?limit=1000");
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		ck_assert_int_eq(get(&f, NULL, paths[i], &r), 401);
		ck_assert_str_eq(code(&r), "unauthenticated");
		ck_assert_str_eq(header(&r, "WWW-Authenticate"),
		    "Bearer realm=\"dlq-monitor\"");
		reply_free(&r);
	}
	ck_assert_int_eq(http(&f, &c, &r), 401);
	reply_free(&r);
	/* the page sends an anonymous browser to the login form */
	ck_assert_int_eq(get(&f, NULL, "/ops/dlq", &r), 303);
	ck_assert_str_eq(header(&r, "Location"), "/login");
	reply_free(&r);
	/* what is public holds no data: the form and the static files */
	ck_assert_int_eq(get(&f, NULL, "/login", &r), 200);
	ck_assert_ptr_nonnull(strstr(r.body.data, "name=\"token\""));
	reply_free(&r);
	ck_assert_int_eq(get(&f, NULL, "/static/console.js", &r), 200);
	ck_assert_str_eq(header(&r, "Content-Type"),
	    "text/javascript; charset=utf-8");
	reply_free(&r);
	/* and the probes stay open */
	ck_assert_int_eq(get(&f, NULL, "/healthz", &r), 200);
	reply_free(&r);
	/* a wrong token is a failed login: ten a window, then 429 */
	for (i = 0; i < 10; i++) {
		ck_assert_int_eq(get(&f, "not-a-token", "/api/v1/stats", &r), 401);
		reply_free(&r);
	}
	ck_assert_int_eq(get(&f, "not-a-token", "/api/v1/stats", &r), 429);
	ck_assert_str_eq(code(&r), "rate_limited");
	ck_assert_str_ne(header(&r, "Retry-After"), "");
	reply_free(&r);
	ck_assert_int_eq(get(&f, f.op.token, "/api/v1/stats", &r), 429);
	reply_free(&r);
	/* another address is not held up by this one */
	c.method = NULL;
	c.path = "/api/v1/me";
	c.body = NULL;
	c.token = f.op.token;
	c.source = "127.0.0.2";
	ck_assert_int_eq(http(&f, &c, &r), 200);
	reply_free(&r);
	/* nobody without a user left a row in the audit */
	/* from the other address: this one is held up now */
	c.path = "/api/v1/audit?limit=1000";
	c.token = f.admin.token;
	ck_assert_int_eq(http(&f, &c, &r), 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r.json,
	    "data")), before);
	reply_free(&r);
	ck_assert_int_ge(h_worker_count(&f.rig.w, "console_login_failed"), 10);
	h_rig_stop(&f.rig);
}
END_TEST

START_TEST(each_role_gets_what_the_socket_gives_it)
{
	struct fixture f;
	struct reply r;
	char path[96], body[128];

	start(&f, NULL);
	/* a viewer reads, without payload or headers, and changes nothing */
	ck_assert_int_eq(get(&f, f.viewer.token, "/api/v1/dead-letters", &r),
	    200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r.json,
	    "data")), 5);
	ck_assert_ptr_null(strstr(r.body.data, MARKER));
	reply_free(&r);
	snprintf(path, sizeof(path), "/api/v1/dead-letters/%lld",
	    (long long)f.evil);
	ck_assert_int_eq(get(&f, f.viewer.token, path, &r), 200);
	ck_assert_ptr_null(strstr(r.body.data, MARKER));
	ck_assert_ptr_null(strstr(r.body.data, "javascript:"));
	reply_free(&r);
	snprintf(body, sizeof(body), "{\"ids\":[%lld],\"reason\":\"no\"}",
	    (long long)f.ids[0]);
	ck_assert_int_eq(post(&f, f.viewer.token, "/api/v1/dead-letters/drop",
	    body, &r), 403);
	ck_assert_str_eq(code(&r), "permission");
	ck_assert_str_eq(h_jstr(r.json, "error"), "drop needs the operator "
	    "role; console:vic is viewer");
	reply_free(&r);
	ck_assert_int_eq(post(&f, f.viewer.token, "/api/v1/replays", body, &r),
	    403);
	reply_free(&r);
	/* an operator reads the payload and headers, as dlqctl show --payload,
	 * and the list previews each payload */
	ck_assert_int_eq(get(&f, f.op.token, "/api/v1/dead-letters", &r), 200);
	ck_assert_ptr_nonnull(strstr(h_jstr(cJSON_GetArrayItem(
	    cJSON_GetObjectItem(r.json, "data"), 0), "payload_preview"), MARKER));
	reply_free(&r);
	ck_assert_int_eq(get(&f, f.op.token, path, &r), 200);
	ck_assert_ptr_nonnull(strstr(r.body.data, MARKER));
	ck_assert_ptr_nonnull(strstr(r.body.data, "javascript:"));
	reply_free(&r);
	/* and changes, audited as console:alice */
	ck_assert_int_eq(post(&f, f.op.token, "/api/v1/dead-letters/drop", body,
	    &r), 200);
	reply_free(&r);
	ck_assert_int_eq(items(&f, f.viewer.token,
	    "/api/v1/audit?actor=console:alice&command=drop"), 1);
	/* the viewer's refusal is in the audit too, as the socket's are */
	ck_assert_int_eq(get(&f, f.admin.token,
	    "/api/v1/audit?actor=console:vic", &r), 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r.json,
	    "data")), 1);
	ck_assert_str_eq(h_jstr(cJSON_GetArrayItem(cJSON_GetObjectItem(r.json,
	    "data"), 0), "result"), "refused: drop needs the operator role; "
	    "console:vic is viewer");
	reply_free(&r);
	h_rig_stop(&f.rig);
}
END_TEST

START_TEST(wrong_requests_get_the_status_and_code_that_fit)
{
	static const struct { const char *method, *path, *body, *type;
	    long status; const char *code; } cases[] = {
		{ NULL, "/api/v1/dead-letters?limt=5", NULL, NULL, 400, "usage" },
		{ NULL, "/api/v1/dead-letters?limit=five", NULL, NULL, 400,
		    "usage" },
		{ NULL, "/api/v1/dead-letters?limit=0", NULL, NULL, 400, "usage" },
		{ NULL, "/api/v1/dead-letters?status=gone", NULL, NULL, 400,
		    "usage" },
		{ NULL, "/api/v1/dead-letters?since=yesterday", NULL, NULL, 400,
		    "usage" },
		{ NULL, "/api/v1/dead-letters?queue=a&queue=b", NULL, NULL, 400,
		    "usage" },
		{ NULL, "/api/v1/groups?by_cause=yes", NULL, NULL, 400, "usage" },
		{ NULL, "/api/v1/dead-letters/999999", NULL, NULL, 404,
		    "not_found" },
		{ NULL, "/api/v1/dead-letters/abc", NULL, NULL, 404, "not_found" },
		{ NULL, "/api/v1/replays/77", NULL, NULL, 404, "not_found" },
		{ NULL, "/api/v2/stats", NULL, NULL, 404, "not_found" },
		{ "DELETE", "/api/v1/stats", NULL, NULL, 405, "usage" },
		{ "POST", "/api/v1/dead-letters/drop", "{\"ids\":[1]}", NULL, 400,
		    "usage" },
		{ "POST", "/api/v1/dead-letters/drop", "{\"ids\":[1],\"reason\":"
		    "\"x\",\"force\":true}", NULL, 400, "usage" },
		{ "POST", "/api/v1/dead-letters/drop", "ids=1", "application/"
		    "x-www-form-urlencoded", 400, "usage" },
		{ "POST", "/api/v1/dead-letters/drop", "[1]", NULL, 400, "usage" },
		{ "POST", "/api/v1/dead-letters/drop", "{\"ids\":[999999],"
		    "\"reason\":\"x\"}", NULL, 404, "not_found" },
		{ "POST", "/api/v1/replays", "{\"ids\":[1],\"execute\":true}",
		    NULL, 400, "usage" },
		{ "POST", "/api/v1/replays", "{\"ids\":[1],\"execute\":\"yes\","
		    "\"reason\":\"r\"}", NULL, 400, "usage" },
		{ "POST", "/api/v1/redrive/resume", "{\"queue\":\"q\",\"reason\":"
		    "\"x\"}", NULL, 404, "not_found" },
	};
	struct fixture f;
	struct reply r;
	struct call c;
	char body[128];
	size_t i;

	start(&f, NULL);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&c, 0, sizeof(c));
		c.method = cases[i].method;
		c.path = cases[i].path;
		c.body = cases[i].body;
		c.type = cases[i].type;
		c.token = f.op.token;
		ck_assert_msg(http(&f, &c, &r) == cases[i].status, "%s %s: %ld "
		    "%s", c.method ? c.method : "GET", c.path, r.status,
		    r.body.data);
		ck_assert_str_eq(code(&r), cases[i].code);
		ck_assert_str_ne(h_jstr(r.json, "error"), "");
		reply_free(&r);
	}
	/* refused: a record dropped already cannot be dropped again */
	snprintf(body, sizeof(body), "{\"ids\":[%lld],\"reason\":\"x\"}",
	    (long long)f.ids[1]);
	ck_assert_int_eq(post(&f, f.op.token, "/api/v1/dead-letters/drop", body,
	    &r), 200);
	reply_free(&r);
	ck_assert_int_eq(post(&f, f.op.token, "/api/v1/dead-letters/drop", body,
	    &r), 409);
	ck_assert_str_eq(code(&r), "refused");
	reply_free(&r);
	h_rig_stop(&f.rig);
}
END_TEST

/* The session cookie of a Set-Cookie header ("dlq_session=..."). */
static void
cookie_of(const struct reply *r, char *out, size_t n)
{
	const char *v = header(r, "Set-Cookie");

	snprintf(out, n, "%.*s", (int)strcspn(v, ";"), v);
}

START_TEST(the_login_form_makes_a_session_whose_changes_need_csrf)
{
	struct fixture f;
	struct reply r;
	struct call c;
	char body[160], cookie[128], csrf[64];

	start(&f, NULL);
	memset(&c, 0, sizeof(c));
	c.method = "POST";
	c.path = "/login";
	c.type = "application/x-www-form-urlencoded";
	snprintf(body, sizeof(body), "token=%s", f.op.token);
	c.body = body;
	ck_assert_int_eq(http(&f, &c, &r), 303);
	ck_assert_str_eq(header(&r, "Location"), "/ops/dlq");
	ck_assert_ptr_nonnull(strstr(header(&r, "Set-Cookie"), "; HttpOnly"));
	ck_assert_ptr_nonnull(strstr(header(&r, "Set-Cookie"),
	    "; SameSite=Strict"));
	/* console.public_url is http:// here: no Secure (a browser would
	 * never send it back) */
	ck_assert_ptr_null(strstr(header(&r, "Set-Cookie"), "Secure"));
	cookie_of(&r, cookie, sizeof(cookie));
	reply_free(&r);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "console_login"), 1);
	/* the session reads, and tells its CSRF token */
	memset(&c, 0, sizeof(c));
	c.path = "/api/v1/me";
	c.cookie = cookie;
	ck_assert_int_eq(http(&f, &c, &r), 200);
	ck_assert_str_eq(h_jstr(cJSON_GetObjectItem(r.json, "data"), "via"),
	    "session");
	snprintf(csrf, sizeof(csrf), "%s", h_jstr(cJSON_GetObjectItem(r.json,
	    "data"), "csrf"));
	ck_assert_int_eq(strlen(csrf), 32);
	reply_free(&r);
	c.path = "/ops/dlq";
	ck_assert_int_eq(http(&f, &c, &r), 200);
	ck_assert_ptr_nonnull(strstr(header(&r, "Content-Security-Policy"),
	    "script-src 'self'"));
	ck_assert_ptr_nonnull(strstr(r.body.data, "/static/console.js"));
	reply_free(&r);
	/* a change without the token, or with another, is refused before
	 * anything is written */
	c.method = "POST";
	c.path = "/api/v1/dead-letters/drop";
	snprintf(body, sizeof(body), "{\"ids\":[%lld],\"reason\":\"x\"}",
	    (long long)f.ids[0]);
	c.body = body;
	ck_assert_int_eq(http(&f, &c, &r), 403);
	ck_assert_str_eq(code(&r), "csrf");
	reply_free(&r);
	c.csrf = "00000000000000000000000000000000";
	ck_assert_int_eq(http(&f, &c, &r), 403);
	reply_free(&r);
	c.csrf = csrf;
	ck_assert_int_eq(http(&f, &c, &r), 200);
	reply_free(&r);
	/* signed out, the cookie is worth nothing */
	c.path = "/logout";
	c.body = "";
	ck_assert_int_eq(http(&f, &c, &r), 303);
	ck_assert_ptr_nonnull(strstr(header(&r, "Set-Cookie"), "Max-Age=0"));
	reply_free(&r);
	memset(&c, 0, sizeof(c));
	c.path = "/api/v1/me";
	c.cookie = cookie;
	ck_assert_int_eq(http(&f, &c, &r), 401);
	reply_free(&r);
	/* another site's page cannot post here, not even the login form */
	memset(&c, 0, sizeof(c));
	c.method = "POST";
	c.path = "/login";
	c.type = "application/x-www-form-urlencoded";
	snprintf(body, sizeof(body), "token=%s", f.op.token);
	c.body = body;
	c.header = "Origin: https://evil.example";
	ck_assert_int_eq(http(&f, &c, &r), 403);
	ck_assert_str_eq(code(&r), "csrf");
	ck_assert_str_eq(header(&r, "Set-Cookie"), "");
	reply_free(&r);
	/* a wrong token in the form: the form again, 401 */
	memset(&c, 0, sizeof(c));
	c.method = "POST";
	c.path = "/login";
	c.type = "application/x-www-form-urlencoded";
	c.body = "token=wrong";
	ck_assert_int_eq(http(&f, &c, &r), 401);
	ck_assert_str_eq(header(&r, "Set-Cookie"), "");
	reply_free(&r);
	h_rig_stop(&f.rig);
}
END_TEST

START_TEST(a_trusted_proxy_names_the_user_and_nobody_else_can)
{
	struct fixture f;
	struct reply r;
	struct call c;
	char body[128], csrf[64];

	start(&f, NULL);
	memset(&c, 0, sizeof(c));
	c.path = "/api/v1/me";
	c.header = "X-Forwarded-User: alice";
	ck_assert_int_eq(http(&f, &c, &r), 200);
	ck_assert_str_eq(h_jstr(cJSON_GetObjectItem(r.json, "data"), "via"),
	    "proxy");
	ck_assert_str_eq(h_jstr(cJSON_GetObjectItem(r.json, "data"), "role"),
	    "operator");
	snprintf(csrf, sizeof(csrf), "%s", h_jstr(cJSON_GetObjectItem(r.json,
	    "data"), "csrf"));
	reply_free(&r);
	/* a user the tokens file does not name gets nothing */
	c.header = "X-Forwarded-User: mallory";
	ck_assert_int_eq(http(&f, &c, &r), 401);
	reply_free(&r);
	/* nor does the header from an address that is no proxy */
	c.header = "X-Forwarded-User: alice";
	c.source = "127.0.0.2";
	ck_assert_int_eq(http(&f, &c, &r), 401);
	reply_free(&r);
	/* a proxy's user changes with the CSRF token its page was given */
	c.source = NULL;
	c.method = "POST";
	c.path = "/api/v1/dead-letters/drop";
	snprintf(body, sizeof(body), "{\"ids\":[%lld],\"reason\":\"x\"}",
	    (long long)f.ids[0]);
	c.body = body;
	ck_assert_int_eq(http(&f, &c, &r), 403);
	reply_free(&r);
	c.csrf = csrf;
	ck_assert_int_eq(http(&f, &c, &r), 200);
	reply_free(&r);
	h_rig_stop(&f.rig);
}
END_TEST

START_TEST(an_unchanged_archive_answers_304_and_a_change_200)
{
	struct fixture f;
	struct reply r;
	struct call c;
	char etag[96], mid[96];

	start(&f, NULL);
	ck_assert_int_eq(get(&f, f.viewer.token, "/api/v1/dead-letters", &r),
	    200);
	snprintf(etag, sizeof(etag), "If-None-Match: %s", header(&r, "ETag"));
	ck_assert_str_ne(header(&r, "ETag"), "");
	reply_free(&r);
	memset(&c, 0, sizeof(c));
	c.path = "/api/v1/dead-letters";
	c.token = f.viewer.token;
	c.header = etag;
	ck_assert_int_eq(http(&f, &c, &r), 304);
	ck_assert_int_eq(r.body.len, 0);
	reply_free(&r);
	/* another role's answer is another representation */
	c.token = f.op.token;
	ck_assert_int_eq(http(&f, &c, &r), 200);
	reply_free(&r);
	/* a new dead letter changes it */
	snprintf(mid, sizeof(mid), "%s-later", f.rig.prefix);
	die(&f, 1, mid, "{}", NULL);
	c.token = f.viewer.token;
	ck_assert_int_eq(http(&f, &c, &r), 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r.json,
	    "data")), 6);
	reply_free(&r);
	h_rig_stop(&f.rig);
}
END_TEST

/* Waits for console replay `job` to end; its answer's data. */
static cJSON *
job_done(const struct fixture *f, int64_t job)
{
	char path[64];
	struct reply r;
	cJSON *d;
	int64_t end = h_now_ms() + WAIT_MS;

	snprintf(path, sizeof(path), "/api/v1/replays/%lld", (long long)job);
	for (;;) {
		ck_assert_int_eq(get(f, f->op.token, path, &r), 200);
		d = cJSON_GetObjectItem(r.json, "data");
		if (strcmp(h_jstr(d, "state"), "running") != 0 ||
		    h_now_ms() > end)
			break;
		reply_free(&r);
		usleep(50 * 1000);
	}
	d = cJSON_Duplicate(d, 1);
	reply_free(&r);
	return d;
}

START_TEST(a_console_replay_sends_each_eligible_dead_letter_once)
{
	struct fixture f;
	struct reply r;
	char body[256];
	cJSON *d;
	int64_t job;

	start(&f, NULL);
	snprintf(body, sizeof(body), "{\"ids\":[%lld],\"reason\":\"not now\"}",
	    (long long)f.ids[1]);
	ck_assert_int_eq(post(&f, f.op.token, "/api/v1/dead-letters/drop", body,
	    &r), 200);
	reply_free(&r);
	/* a dry run by default: the plan, and nothing sent */
	snprintf(body, sizeof(body), "{\"ids\":[%lld,%lld,%lld],\"reason\":"
	    "\"fixed\"}", (long long)f.ids[0], (long long)f.ids[1],
	    (long long)f.ids[2]);
	ck_assert_int_eq(post(&f, f.op.token, "/api/v1/replays", body, &r), 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r.json,
	    "data")), 3);
	ck_assert(!cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(
	    cJSON_GetObjectItem(r.json, "data"), 1), "eligible")));
	reply_free(&r);
	ck_assert_int_eq(h_count(f.rig.q[0]), 0);
	/* executed: two of three go, each once */
	snprintf(body, sizeof(body), "{\"ids\":[%lld,%lld,%lld],\"reason\":"
	    "\"fixed\",\"execute\":true,\"rate\":0}", (long long)f.ids[0],
	    (long long)f.ids[1], (long long)f.ids[2]);
	ck_assert_int_eq(post(&f, f.op.token, "/api/v1/replays", body, &r), 202);
	ck_assert_int_eq(h_jnum(cJSON_GetObjectItem(r.json, "data"),
	    "eligible"), 2);
	job = h_jnum(cJSON_GetObjectItem(r.json, "data"), "job");
	reply_free(&r);
	d = job_done(&f, job);
	ck_assert_str_eq(h_jstr(d, "state"), "done");
	ck_assert_int_eq(h_jnum(d, "published"), 2);
	ck_assert_int_eq(h_jnum(d, "failed") + h_jnum(d, "unknown"), 0);
	cJSON_Delete(d);
	ck_assert(h_wait_count(f.rig.q[0], 2, WAIT_MS));
	/* again: nothing is eligible any more, nothing is sent twice */
	ck_assert_int_eq(post(&f, f.op.token, "/api/v1/replays", body, &r), 202);
	ck_assert_int_eq(h_jnum(cJSON_GetObjectItem(r.json, "data"),
	    "eligible"), 0);
	job = h_jnum(cJSON_GetObjectItem(r.json, "data"), "job");
	reply_free(&r);
	d = job_done(&f, job);
	ck_assert_int_eq(h_jnum(d, "published"), 0);
	cJSON_Delete(d);
	ck_assert_int_eq(h_count(f.rig.q[0]), 2);
	/* claimed and finished as console:alice */
	ck_assert_int_eq(items(&f, f.op.token, "/api/v1/audit?actor=console:alice"
	    "&command=replay_finish"), 1);
	ck_assert_int_eq(h_worker_count(&f.rig.w, "console_replay_done"), 2);
	h_rig_stop(&f.rig);
}
END_TEST

START_TEST(a_digest_links_each_group_to_the_console)
{
	struct fixture f;

	start(&f, "alert = { cooldown_ms = 1000; };\n");
	ck_assert(h_wait_digests_with(&f.rig.w, "open http://console.example"
	    "/ops/dlq?signature=", NULL, 1, WAIT_MS));
	ck_assert_int_ge(h_digests_with(&f.rig.w, "console http://console."
	    "example/ops/dlq", NULL, NULL), 1);
	ck_assert_int_ge(h_digests_with(&f.rig.w, "next: inspect payload and "
	    "consumer logs", NULL, NULL), 1);
	h_rig_stop(&f.rig);
}
END_TEST

/* The OpenAPI file's schemas, checked as far as they say: type,
 * required members, properties, items, $ref, oneOf. */
static const cJSON *
resolve(const cJSON *spec, const cJSON *s)
{
	const cJSON *ref = cJSON_GetObjectItem(s, "$ref");
	const char *name;

	if (!cJSON_IsString(ref))
		return s;
	name = strrchr(ref->valuestring, '/') + 1;
	return cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(spec,
	    "components"), "schemas"), name);
}

static bool
conforms(const cJSON *spec, const cJSON *s, const cJSON *v, char *why,
    size_t n)
{
	const cJSON *t, *e, *p;

	s = resolve(spec, s);
	if (s == NULL) {
		snprintf(why, n, "a $ref to nothing");
		return false;
	}
	if ((t = cJSON_GetObjectItem(s, "oneOf")) != NULL) {
		cJSON_ArrayForEach(e, t)
			if (conforms(spec, e, v, why, n))
				return true;
		return false;
	}
	t = cJSON_GetObjectItem(s, "type");
	if (!cJSON_IsString(t))
		return true;
	if (strcmp(t->valuestring, "object") == 0) {
		if (!cJSON_IsObject(v)) {
			snprintf(why, n, "not an object");
			return false;
		}
		cJSON_ArrayForEach(e, cJSON_GetObjectItem(s, "required"))
			if (!cJSON_HasObjectItem(v, e->valuestring)) {
				snprintf(why, n, "no member '%s'", e->valuestring);
				return false;
			}
		cJSON_ArrayForEach(p, cJSON_GetObjectItem(s, "properties"))
			if (cJSON_HasObjectItem(v, p->string) && !conforms(spec,
			    p, cJSON_GetObjectItem(v, p->string), why, n))
				return false;
		return true;
	}
	if (strcmp(t->valuestring, "array") == 0) {
		if (!cJSON_IsArray(v)) {
			snprintf(why, n, "not an array");
			return false;
		}
		cJSON_ArrayForEach(e, v)
			if (cJSON_HasObjectItem(s, "items") && !conforms(spec,
			    cJSON_GetObjectItem(s, "items"), e, why, n))
				return false;
		return true;
	}
	if (strcmp(t->valuestring, "string") == 0 && !cJSON_IsString(v)) {
		snprintf(why, n, "not a string");
		return false;
	}
	if ((strcmp(t->valuestring, "integer") == 0 ||
	    strcmp(t->valuestring, "number") == 0) && !cJSON_IsNumber(v)) {
		snprintf(why, n, "not a number");
		return false;
	}
	if (strcmp(t->valuestring, "boolean") == 0 && !cJSON_IsBool(v)) {
		snprintf(why, n, "not true or false");
		return false;
	}
	return true;
}

/* Checks answer `r` of `method` `tmpl` (the spec's path) against the
 * spec, and marks the operation seen. */
static void
check_answer(cJSON *spec, const char *tmpl, const char *method,
    const struct reply *r)
{
	cJSON *op = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    spec, "paths"), tmpl), method);
	const cJSON *res, *schema;
	char status[8], why[256] = "";

	ck_assert_msg(op != NULL, "%s %s is not in docs/openapi.json", method,
	    tmpl);
	snprintf(status, sizeof(status), "%ld", r->status);
	res = cJSON_GetObjectItem(cJSON_GetObjectItem(op, "responses"), status);
	ck_assert_msg(res != NULL, "%s %s: %s is not in docs/openapi.json",
	    method, tmpl, status);
	schema = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    res, "content"), "application/json"), "schema");
	if (schema != NULL)
		ck_assert_msg(conforms(spec, schema, r->json, why, sizeof(why)),
		    "%s %s %s: %s in %s", method, tmpl, status, why,
		    r->body.data);
	if (!cJSON_HasObjectItem(op, "x-seen"))
		cJSON_AddTrueToObject(op, "x-seen");
}

START_TEST(every_operation_answers_as_the_openapi_file_says)
{
	struct fixture f;
	struct reply r;
	struct call c;
	cJSON *spec, *path, *op;
	char *text = h_slurp("docs/openapi.json"), p[160], b[256];
	int64_t job;

	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(spec = cJSON_Parse(text));
	free(text);
	start(&f, NULL);
#define GET(tmpl, path_, token, want) do {				\
	ck_assert_int_eq(get(&f, token, path_, &r), want);		\
	check_answer(spec, tmpl, "get", &r);				\
	reply_free(&r);							\
} while (0)
#define POST(tmpl, json, token, want) do {				\
	ck_assert_msg(post(&f, token, tmpl, json, &r) == want, "%s: %ld %s", \
	    tmpl, r.status, r.body.data);				\
	check_answer(spec, tmpl, "post", &r);				\
	reply_free(&r);							\
} while (0)
	GET("/api/v1/me", "/api/v1/me", f.op.token, 200);
	GET("/api/v1/me", "/api/v1/me", NULL, 401);
	GET("/api/v1/dead-letters", "/api/v1/dead-letters?limit=3&status=open",
	    f.viewer.token, 200);
	GET("/api/v1/dead-letters", "/api/v1/dead-letters?limit=x",
	    f.viewer.token, 400);
	snprintf(p, sizeof(p), "/api/v1/dead-letters/%lld", (long long)f.evil);
	GET("/api/v1/dead-letters/{id}", p, f.op.token, 200);
	GET("/api/v1/dead-letters/{id}", p, f.viewer.token, 200);
	GET("/api/v1/dead-letters/{id}", "/api/v1/dead-letters/424242",
	    f.viewer.token, 404);
	GET("/api/v1/stats", "/api/v1/stats", f.viewer.token, 200);
	GET("/api/v1/groups", "/api/v1/groups", f.viewer.token, 200);
	GET("/api/v1/groups", "/api/v1/groups?by_cause=true", f.viewer.token,
	    200);
	GET("/api/v1/audit", "/api/v1/audit?limit=5", f.viewer.token, 200);
	GET("/api/v1/redrive", "/api/v1/redrive", f.viewer.token, 200);
	GET("/api/v1/topology", "/api/v1/topology", f.viewer.token, 200);
	snprintf(b, sizeof(b), "{\"ids\":[%lld,424242],\"owner\":\"bob\","
	    "\"decision\":\"fix the schema\"}", (long long)f.ids[0]);
	POST("/api/v1/dead-letters/assign", b, f.op.token, 404);
	snprintf(b, sizeof(b), "{\"ids\":[%lld],\"owner\":\"bob\",\"decision\":"
	    "\"fix\",\"escalate_in_ms\":60000}", (long long)f.ids[0]);
	POST("/api/v1/dead-letters/assign", b, f.op.token, 200);
	POST("/api/v1/dead-letters/assign", b, f.viewer.token, 403);
	snprintf(b, sizeof(b), "{\"ids\":[%lld],\"reason\":\"dup\"}",
	    (long long)f.ids[1]);
	POST("/api/v1/dead-letters/drop", b, f.op.token, 200);
	POST("/api/v1/dead-letters/drop", b, f.op.token, 409);
	POST("/api/v1/dead-letters/drop", "{}", f.op.token, 400);
	POST("/api/v1/dead-letters/reopen", b, f.op.token, 200);
	POST("/api/v1/dead-letters/reopen", b, f.op.token, 409);
	snprintf(b, sizeof(b), "{\"ids\":[%lld,%lld]}", (long long)f.ids[1],
	    (long long)f.ids[2]);
	POST("/api/v1/replays", b, f.op.token, 200);
	snprintf(b, sizeof(b), "{\"ids\":[%lld],\"reason\":\"r\",\"execute\":"
	    "true,\"rate\":0}", (long long)f.ids[2]);
	ck_assert_int_eq(post(&f, f.op.token, "/api/v1/replays", b, &r), 202);
	check_answer(spec, "/api/v1/replays", "post", &r);
	job = h_jnum(cJSON_GetObjectItem(r.json, "data"), "job");
	reply_free(&r);
	cJSON_Delete(job_done(&f, job));
	snprintf(p, sizeof(p), "/api/v1/replays/%lld", (long long)job);
	GET("/api/v1/replays/{job}", p, f.op.token, 200);
	POST("/api/v1/replays", "{\"execute\":true}", f.op.token, 400);
	POST("/api/v1/replays", b, f.viewer.token, 403);
	GET("/api/v1/replays/{job}", "/api/v1/replays/999", f.op.token, 404);
	POST("/api/v1/redrive/resume", "{\"queue\":\"nowhere\",\"reason\":\"r\"}",
	    f.op.token, 404);
	memset(&c, 0, sizeof(c));
	c.path = "/api/v1/stats";
	c.token = f.op.token;
	ck_assert_int_eq(http(&f, &c, &r), 200);
	snprintf(b, sizeof(b), "If-None-Match: %s", header(&r, "ETag"));
	reply_free(&r);
	c.header = b;
	ck_assert_int_eq(http(&f, &c, &r), 304);
	check_answer(spec, "/api/v1/stats", "get", &r);
	reply_free(&r);
	/* nothing in the file that the worker was not asked */
	cJSON_ArrayForEach(path, cJSON_GetObjectItem(spec, "paths"))
		cJSON_ArrayForEach(op, path)
			ck_assert_msg(cJSON_HasObjectItem(op, "x-seen"),
			    "%s %s: documented, never asked", op->string,
			    path->string);
#undef GET
#undef POST
	cJSON_Delete(spec);
	h_rig_stop(&f.rig);
}
END_TEST

/* The directory of playwright-core (scripts/deps.sh test installs it). */
static const char *
playwright(void)
{
	const char *p = getenv("DLQ_PLAYWRIGHT");

	return p != NULL ? p : "/usr/local/lib/dlq-monitor/browser/"
	    "node_modules/playwright-core";
}

START_TEST(the_page_works_in_a_real_browser_and_runs_nothing_it_shows)
{
	struct fixture f;
	struct reply r;
	char body[128], env[12][256], ids[96], *out = NULL;
	const char *argv[] = { "/usr/bin/env", "node",
	    "tests/browser/console.mjs", NULL };
	const char *envp[13];
	int i, rc;

	start(&f, NULL);
	/* the middle of the three newest in q0 is not eligible */
	snprintf(body, sizeof(body), "{\"ids\":[%lld],\"reason\":\"not this\"}",
	    (long long)f.ids[1]);
	ck_assert_int_eq(post(&f, f.op.token, "/api/v1/dead-letters/drop", body,
	    &r), 200);
	reply_free(&r);
	ck_assert_int_eq(mkdir("build/screenshots", 0755) == 0 || access(
	    "build/screenshots", W_OK) == 0, 1);
	snprintf(ids, sizeof(ids), "%lld,%lld,%lld", (long long)f.ids[2],
	    (long long)f.ids[1], (long long)f.ids[0]);
	snprintf(env[0], sizeof(env[0]), "DLQ_CONSOLE_URL=%s", f.base);
	snprintf(env[1], sizeof(env[1]), "DLQ_OP_TOKEN=%s", f.op.token);
	snprintf(env[2], sizeof(env[2]), "DLQ_VIEWER_TOKEN=%s", f.viewer.token);
	snprintf(env[3], sizeof(env[3]), "DLQ_QUEUE=%s", f.rig.q[0]);
	snprintf(env[4], sizeof(env[4]), "DLQ_OTHER_QUEUE=%s", f.rig.q[1]);
	snprintf(env[5], sizeof(env[5]), "DLQ_MARKER=%s", MARKER);
	snprintf(env[6], sizeof(env[6]), "DLQ_EVIL_ID=%lld", (long long)f.evil);
	snprintf(env[7], sizeof(env[7]), "DLQ_REPLAY_IDS=%s", ids);
	snprintf(env[8], sizeof(env[8]), "DLQ_UNRESOLVED=4");
	snprintf(env[9], sizeof(env[9]), "DLQ_SHOTS=build/screenshots");
	snprintf(env[10], sizeof(env[10]), "DLQ_PLAYWRIGHT=%s", playwright());
	snprintf(env[11], sizeof(env[11]), "DLQ_CHROMIUM=/usr/bin/chromium");
	for (i = 0; i < 12; i++)
		envp[i] = env[i];
	envp[12] = NULL;
	rc = h_run(argv, envp, &out);
	fputs(out != NULL ? out : "", stderr);
	ck_assert_msg(rc == 0, "the browser test failed:\n%s", out);
	ck_assert_ptr_null(strstr(out, "FAIL"));
	free(out);
	/* what the page did reached the broker and the archive */
	ck_assert(h_wait_count(f.rig.q[0], 2, WAIT_MS));
	ck_assert_int_eq(items(&f, f.op.token, "/api/v1/dead-letters?status="
	    "replayed"), 2);
	ck_assert_int_eq(access("build/screenshots/console-overview.png", R_OK),
	    0);
	ck_assert_int_eq(access("build/screenshots/console-dialog.png", R_OK),
	    0);
	h_rig_stop(&f.rig);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("console");
	TCase *tc = tcase_create("console"), *page = tcase_create("page");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, nobody_gets_past_the_door_without_a_user);
	tcase_add_test(tc, each_role_gets_what_the_socket_gives_it);
	tcase_add_test(tc, wrong_requests_get_the_status_and_code_that_fit);
	tcase_add_test(tc, the_login_form_makes_a_session_whose_changes_need_csrf);
	tcase_add_test(tc, a_trusted_proxy_names_the_user_and_nobody_else_can);
	tcase_add_test(tc, an_unchanged_archive_answers_304_and_a_change_200);
	tcase_add_test(tc, a_console_replay_sends_each_eligible_dead_letter_once);
	tcase_add_test(tc, a_digest_links_each_group_to_the_console);
	tcase_add_test(tc, every_operation_answers_as_the_openapi_file_says);
	suite_add_tcase(s, tc);
	/* the page talks to the API alone, which the PostgreSQL pass tests
	 * above: it runs once, on SQLite (make check-postgres-archive leaves
	 * the tag "browser" out) */
	tcase_set_tags(page, "browser");
	tcase_set_timeout(page, 120);
	tcase_add_test(page,
	    the_page_works_in_a_real_browser_and_runs_nothing_it_shows);
	suite_add_tcase(s, page);
	return s;
}

DLQ_CHECK_MAIN(suite)
