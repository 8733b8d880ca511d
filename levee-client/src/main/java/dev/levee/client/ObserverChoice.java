package dev.levee.client;

import dev.levee.runtime.HostPort;
import java.util.List;

/**
 * Which observer's list a client takes from one refresh round when it knows several (issue 22, item 9).
 * Pure: no I/O, no clock.
 *
 * <p>The rule, in order:
 * <ol>
 *   <li>Only observers that answered count; when none did, there is no choice (the last list is kept).</li>
 *   <li>Ready lists first: a list its observer marks not ready (restarted within one heartbeat TTL, or cut off
 *       from etcd) is taken only when no observer that answered is ready — and then only as a client without a
 *       list takes it (a client with a list holds it, see {@link LeveeClient}).</li>
 *   <li>When every remaining list is etcd's ({@code membership: "etcd"}), their revisions are etcd's and compare:
 *       the highest wins — the newest membership, not an observer whose watch lags.</li>
 *   <li>Otherwise (heartbeat membership, or an observer older than issue 22 that does not say) revisions are each
 *       observer's own count and do not compare: the observer in use stays while it qualifies.</li>
 *   <li>Ties go to the observer in use, then to the first in the order given ({@code --observer a,b}).</li>
 * </ol>
 */
final class ObserverChoice {

    private ObserverChoice() {
    }

    /**
     * One observer's answer in a round.
     *
     * @param observer the observer asked
     * @param view     its list, or null when it did not answer (or answered something unusable)
     */
    record Answer(HostPort observer, LeveeClient.View view) {
    }

    /**
     * Chooses the list to take.
     *
     * @param answers one per observer, in the order they were given
     * @param current the observer whose list is in use, or null for none yet
     * @return the index in {@code answers} of the list to take, or -1 when no observer answered
     */
    static int choose(List<Answer> answers, HostPort current) {
        boolean anyReady = answers.stream().anyMatch(a -> a.view() != null && a.view().isReady());
        boolean allEtcd = true;
        for (Answer a : answers) {
            if (eligible(a, anyReady) && !"etcd".equals(a.view().membership())) {
                allEtcd = false;
            }
        }
        int best = -1;
        for (int i = 0; i < answers.size(); i++) {
            Answer a = answers.get(i);
            if (!eligible(a, anyReady)) {
                continue;
            }
            if (best < 0) {
                best = i;
                continue;
            }
            Answer b = answers.get(best);
            boolean isCurrent = a.observer().equals(current);
            if (allEtcd && a.view().revision() != b.view().revision()) {
                if (a.view().revision() > b.view().revision()) {
                    best = i;
                }
            } else if (isCurrent) {
                best = i; // a tie, or revisions that do not compare: the observer in use stays
            }
        }
        return best;
    }

    private static boolean eligible(Answer a, boolean anyReady) {
        return a.view() != null && (!anyReady || a.view().isReady());
    }
}
