/* ctlhelp.c - what each dlqctl command does and what its options mean,
 * for `dlqctl help COMMAND` (dlqctl(8) has the whole story, and a test
 * keeps the two in step). */
#include "ctlhelp.h"

#include <stddef.h>
#include <string.h>

static const struct {
	const char	*name;
	const char	*text;
} helps[] = {
	{ "list",
"The newest dead letters in the archive, one per line (50 by default).\n"
"  --queue Q             a work queue of the topology, or its DLQ\n"
"  --status S            open, assigned, replaying, replayed, discarded\n"
"  --class C             transient, rate_limited, validation, configuration,\n"
"                        contract, security, expired, manual, unknown\n"
"  --message-id ID       the deaths of one message (exact match)\n"
"  --correlation-id ID   the same by correlation id\n"
"  --owner NAME          the cases of one owner (as assign gave it)\n"
"  --signature SIG       one failure signature (see groups)\n"
"  --since DUR           received in the last DUR\n"
"  --limit N             at most N (1..10000)\n"
"  --before ID           the records older than archive id ID: the next "
"page\n"
"Role: viewer.\n" },
	{ "show",
"Everything the archive holds of one dead letter: its properties, the\n"
"x-death timeline, class and how-to-fix hint, the case (owner, decision),\n"
"replay attempts and audit history.\n"
"  --payload   its headers and payload too (role operator)\n"
"Role: viewer.\n" },
	{ "stats",
"Unresolved dead letters by queue, class and status, the oldest, new in\n"
"the last hour and day, each queue's share of its traffic, escalations,\n"
"decision times and the automatic redrive.\n"
"Role: viewer.\n" },
	{ "groups",
"Dead letters grouped by failure signature, largest first: count,\n"
"unresolved, first and last seen, a sample archive id (for show).\n"
"  --queue Q     one queue\n"
"  --class C     one error class (transient, rate_limited, validation,\n"
"                configuration, contract, security, expired, manual,\n"
"                unknown): what one team owns\n"
"  --since DUR   only what was received in the last DUR: what broke now\n"
"  --limit N     at most N groups, or causes (50; up to 10000)\n"
"  --by-cause    the groups of one cause in several queues (the same\n"
"                reason, class and error text) as one, the number of\n"
"                queues and under it each queue's group with its\n"
"                signature, as the digest gathers them; with --queue,\n"
"                the causes that queue has a group of; up to 100000\n"
"                groups at once (more: narrow by --since or --class)\n"
"Role: viewer.\n" },
	{ "assign",
"Gives cases an owner and a decision (status assigned).\n"
"  ID...              archive ids (at most 1000)\n"
"  --queue Q          or the open records of a queue, narrowed by --class,\n"
"                     --signature, --since; at most --limit (10000) a run\n"
"  --signature SIG    or those of one failure signature (as groups and\n"
"                     the digest show it), which names its queue\n"
"  --owner NAME       who decides: a team or a person\n"
"  --decision TEXT    what is to be done\n"
"  --escalate-in DUR  overdue after DUR unless decided (stats, digest)\n"
"  --evidence TEXT    what was checked, kept with the time of the check\n"
"  --yes              needed for more than one record (without it a\n"
"                     --queue selection is only counted)\n"
"Role: operator.\n" },
	{ "drop",
"Closes cases without sending them again (status discarded, with the\n"
"reason and who did it). Nothing is deleted.\n"
"  ID...           archive ids (at most 1000)\n"
"  --queue Q       or the open and assigned records of a queue, narrowed\n"
"                  by --class, --signature, --since; at most --limit\n"
"                  (10000) a run\n"
"  --signature SIG or those of one failure signature (as groups and the\n"
"                  digest show it), which names its queue\n"
"  --reason TEXT   why: kept in the record and the audit\n"
"  --yes           needed for more than one record (without it a --queue\n"
"                  selection is only counted)\n"
"A drop made by mistake is undone by reopen while the payload is kept.\n"
"Role: operator.\n" },
	{ "reopen",
"Undoes a drop: a discarded record is open again (assigned when it had\n"
"an owner), to be replayed or assigned. Refused for a record whose\n"
"payload was purged, or a replay of which may have arrived (published,\n"
"or its outcome unknown when it was dropped): it could go out twice.\n"
"  ID...           archive ids (at most 1000)\n"
"  --queue Q       or the discarded records of a queue it can take\n"
"                  back, narrowed by --class, --signature, --since; at\n"
"                  most --limit (10000) a run\n"
"  --signature SIG or those of one failure signature, which names its\n"
"                  queue\n"
"  --reason TEXT   why: kept in the audit, beside the drop's\n"
"  --yes           needed for more than one record (without it a --queue\n"
"                  selection is only counted)\n"
"Role: operator.\n" },
	{ "purge",
"Retention: deletes the payloads and headers of resolved (replayed or\n"
"discarded) records. The records, their reasons, classes and outcomes\n"
"stay.\n"
"  --older-than DUR   those received more than DUR ago (m is minutes:\n"
"                     30d is a month)\n"
"  --yes              needed to purge (without it they are only counted,\n"
"                     and the cutoff is shown as a date); on a terminal\n"
"                     a line says how far it is as it goes\n"
"Role: admin.\n" },
	{ "replay",
"Publishes vetted dead letters again, with their original message ids\n"
"and headers, marked as replays (x-replay-of, x-replayed-by, ...).\n"
"Without --execute it is a dry run: what would go, where, and why not.\n"
"  ID... | --queue Q   what to replay (--class, --signature, --since "
"narrow\n"
"                      a queue's records)\n"
"  --signature SIG     or one failure signature's records (as groups and\n"
"                      the digest show it: it names its queue)\n"
"  --from-queue Q      a DLQ the worker does not monitor, read live\n"
"  --limit N           at most N messages (replay.limit, 100)\n"
"  --rate R            messages a second (replay.rate, 50; 0: no limit)\n"
"  --reason TEXT       why: needed with --execute, kept with each attempt\n"
"  --evidence TEXT     what was checked first\n"
"  --to-exchange X --routing-key K\n"
"                      another target (\"\": the default exchange), not\n"
"                      a DLQ; by default the queue that failed it\n"
"  --reset-retries     x-retry-count back to 0\n"
"  --force             past the policy's class rule (replay.never) and a\n"
"                      replay of unknown outcome (may send it twice);\n"
"                      needs --reason\n"
"  --canary K --watch DUR\n"
"                      K first (1..1000), watched for DUR; the rest only\n"
"                      if none of them dies again\n"
"  --execute           send\n"
"Each message is claimed before it is sent and counted published only\n"
"when the broker confirms it: never twice by accident.\n"
"Role: operator.\n" },
	{ "redrive status",
"Per queue of redrive.queues: its circuit (open or closed, when it\n"
"tripped, how many came back), how many were redriven, the cases left\n"
"for humans.\n"
"Role: viewer.\n" },
	{ "redrive resume",
"Closes the open redrive circuit of QUEUE: its next tick redrives again.\n"
"  --reason TEXT   why it is safe now (audited)\n"
"Role: operator.\n" },
	{ "audit",
"Every request that changed something (refused ones too), newest first:\n"
"when, who, command, arguments, result.\n"
"  --since DUR      in the last DUR\n"
"  --actor USER     of one OS user (dlq-worker: the automatic redrive,\n"
"                   a class changed by new classification rules)\n"
"  --command CMD    assign, drop, reopen, purge, replay_claim,\n"
"                   replay_finish, audit_note, redrive_resume, redrive,\n"
"                   reclassify\n"
"  --limit N        at most N entries (50; up to 10000)\n"
"  --before ID      the entries before audit id ID: the next page\n"
"Role: viewer.\n" },
	{ "topology show",
"The monitored DLQs, one per line (--json: the whole topology).\n"
"Reads the configuration and topology file; needs no worker.\n" },
	{ "topology assert",
"Declares the exchanges, queues and bindings of the topology on the\n"
"broker. A queue that exists with other arguments is reported and left\n"
"as it is (exit 3). Needs no worker.\n" },
	{ "test-alert",
"Sends a clearly marked test digest to every webhook target now and\n"
"prints each one's HTTP status; exit 1 if any failed or none is set.\n"
"Needs no worker.\n" },
	{ "console token",
"Makes a token for the web console's user NAME with ROLE (viewer,\n"
"operator or admin) and prints it once, with the line to add to the\n"
"file console.tokens_file names: NAME ROLE SHA256-OF-TOKEN. The file\n"
"holds no secret. The user signs in at /login with the token, or sends\n"
"it as Authorization: Bearer TOKEN. Needs no worker: the worker reads\n"
"the file again when it changes.\n" },
	{ "inject",
"Demo traffic: publishes N messages to work queue Q and fails each one\n"
"as an application would, so that real dead letters reach its DLQ.\n"
"  --queue Q       a work queue with no consumer\n"
"  --count N       how many (10)\n"
"  --error TEXT    the error header they die with\n"
"  --retries K     failed K times through Q.retry first (0)\n"
"Interrupted, it rejects the rest as they come back from Q.retry; a\n"
"second interrupt leaves them. Needs no worker.\n" },
};

const char *
dlq_ctl_help(const char *command)
{
	size_t i;

	for (i = 0; i < sizeof(helps) / sizeof(helps[0]); i++)
		if (strcmp(helps[i].name, command) == 0)
			return helps[i].text;
	return NULL;
}

const char *
dlq_ctl_help_command(size_t i)
{
	return i < sizeof(helps) / sizeof(helps[0]) ? helps[i].name : NULL;
}
