package dev.levee.governor;

import java.util.Arrays;

/**
 * Orders blocked principals by {@link Principal#readyAt} (a binary min-heap that records each
 * principal's index, so removal is O(log n)). Times compare by subtraction, so any clock origin
 * works. Not thread-safe: guarded by the governor's lock.
 */
final class PrincipalHeap {

    private Principal[] heap = new Principal[16];
    private int size;

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    Principal peek() {
        return heap[0];
    }

    void add(Principal p) {
        if (size == heap.length) {
            heap = Arrays.copyOf(heap, size * 2);
        }
        heap[size] = p;
        p.heapIndex = size;
        size++;
        siftUp(size - 1);
    }

    Principal poll() {
        Principal top = heap[0];
        removeAt(0);
        return top;
    }

    void remove(Principal p) {
        removeAt(p.heapIndex);
    }

    /** Restores the order after {@code p.readyAt} changed. */
    void update(Principal p) {
        siftDown(siftUp(p.heapIndex));
    }

    /** Restores the order after any number of {@code readyAt} changed. */
    void heapify() {
        for (int i = size / 2 - 1; i >= 0; i--) {
            siftDown(i);
        }
    }

    /** Returns the principal at {@code i} (0 ≤ i &lt; size), in heap order; for iteration. */
    Principal get(int i) {
        return heap[i];
    }

    void clear() {
        for (int i = 0; i < size; i++) {
            heap[i].heapIndex = -1;
            heap[i] = null;
        }
        size = 0;
    }

    private void removeAt(int i) {
        Principal removed = heap[i];
        removed.heapIndex = -1;
        size--;
        if (i == size) {
            heap[size] = null;
            return;
        }
        Principal last = heap[size];
        heap[size] = null;
        heap[i] = last;
        last.heapIndex = i;
        siftDown(siftUp(i));
    }

    private int siftUp(int i) {
        Principal p = heap[i];
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            Principal q = heap[parent];
            if (p.readyAt - q.readyAt >= 0) {
                break;
            }
            heap[i] = q;
            q.heapIndex = i;
            i = parent;
        }
        heap[i] = p;
        p.heapIndex = i;
        return i;
    }

    private void siftDown(int i) {
        Principal p = heap[i];
        int half = size >>> 1;
        while (i < half) {
            int child = 2 * i + 1;
            int right = child + 1;
            if (right < size && heap[right].readyAt - heap[child].readyAt < 0) {
                child = right;
            }
            Principal c = heap[child];
            if (p.readyAt - c.readyAt <= 0) {
                break;
            }
            heap[i] = c;
            c.heapIndex = i;
            i = child;
        }
        heap[i] = p;
        p.heapIndex = i;
    }
}
