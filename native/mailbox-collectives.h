/** @file One-sided asynchronous collectives over shared memory (post early, pull late): the mailbox API the jaxts.async ops call. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "communicator.h"

namespace jaxts {

/** The staged inputs of one collective, keyed by (launch, seq, first rank of the group); defined in mailbox-collectives.cc. */
struct Mailbox;

/** Collective kinds as the async ops number them (0 AllReduce, 1 AllGather, 2 ReduceScatter, 3 AllToAll, 4 CollectivePermute). */
enum MailboxKind : int { kMbAllReduce = 0, kMbAllGather = 1, kMbReduceScatter = 2, kMbAllToAll = 3, kMbPermute = 4 };

/**
 * Whether the async ops use mailboxes (the default) rather than a communication thread per device:
 * JAXTS_ASYNC_COLLECTIVES=thread selects the thread (read at each CollectiveStart: set it while no launch is in flight).
 */
bool MailboxModeEnabled();
/** How long a Done polls for its peers' posts before it blocks (microseconds, when a core is free), by default. */
constexpr int kMailboxSpinUs = 50;
/**
 * How a Done waits for its peers' posts before it blocks: JAXTS_MAILBOX_SPIN (read per Done, an A/B switch) = "<us>"
 * polls up to that long (0: block at once; default kMailboxSpinUs), "y<count>" is the previous policy (count polls,
 * yielding the core after 64; "y2000" was the default).
 */
struct MailboxSpin {
  bool yields;
  int amount;
};
MailboxSpin MailboxSpinPolicy();

/** All-reduces of more bytes than this keep the communication thread (a pull reads all n inputs whole: n x the reads). */
constexpr size_t kMailboxAllReduceMaxBytes = size_t(1) << 20;

/**
 * Posts this rank's input (count elements of `type`, copied into the mailbox) and returns at once: it never waits
 * for peers. On success *box and *pos say where it was posted; "" or an error naming the call (an aborted launch,
 * a rank not in the group, a rank that posted twice).
 */
std::string MailboxPost(const CollectiveCall& c, int rank, int kind, int op, const void* in, size_t count, int type,
                        std::shared_ptr<Mailbox>* box, int* pos);

/**
 * Waits until every member of the group posted (spin, then block; bounded by c.timeout_ms; an aborted launch
 * releases it), then writes this member's result into out (ycount elements) from the staged inputs. *ready_us gets
 * the time the last member posted. The last member to pull removes the mailbox.
 */
std::string MailboxPull(const CollectiveCall& c, const std::shared_ptr<Mailbox>& box, int pos, void* out, size_t ycount,
                        const std::vector<std::pair<int, int>>& pairs, double* ready_us);

/** Fails the launch's mailboxes that some member has not posted to (their waiters return `why`), and later posts. */
void MailboxAbort(uint64_t launch, const std::string& why);
/** Forgets a finished launch: its abort mark and every mailbox it left (failed runs). */
void MailboxForget(uint64_t launch);
/** Mailboxes still open (tests: 0 once every launch finished). */
size_t OpenMailboxes();

}  // namespace jaxts
