package dev.levee.s3;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Reads bytes as ISO-8859-1 characters, one {@code char} per byte: received bytes given to
 * {@link S3Classifier#classify(String, String, CharSequence, boolean)} as the request target without first
 * becoming a {@code String} — the characters are those of {@code new String(bytes, 0, length, ISO_8859_1)}, the
 * string Vert.x makes of the same bytes in a header. Only the parts of the answer (the key, the bucket) become
 * strings.
 *
 * <p>A reusable view, not a value: its owner points it at new bytes for each request ({@link #wrap}), and whoever
 * reads it must not keep it. Not thread-safe. {@link #toString()} and {@link #subSequence} copy.
 */
public final class Latin1Chars implements CharSequence {

    private byte[] bytes = new byte[0];
    private int length;

    /**
     * Views {@code bytes[0, length)}, not copied: they must not change while the view is read.
     *
     * @return this view
     * @throws IndexOutOfBoundsException when {@code length} is negative or beyond the array
     */
    public Latin1Chars wrap(byte[] bytes, int length) {
        Objects.checkFromIndexSize(0, length, bytes.length);
        this.bytes = bytes;
        this.length = length;
        return this;
    }

    @Override
    public int length() {
        return length;
    }

    @Override
    public char charAt(int index) {
        Objects.checkIndex(index, length);
        return (char) (bytes[index] & 0xFF);
    }

    /** Returns a copy of the characters {@code [start, end)} as a {@code String}. */
    @Override
    public CharSequence subSequence(int start, int end) {
        return substring(start, end);
    }

    /** Returns a copy of the characters {@code [from, to)} as a {@code String}. */
    String substring(int from, int to) {
        Objects.checkFromToIndex(from, to, length);
        return new String(bytes, from, to - from, StandardCharsets.ISO_8859_1);
    }

    /** Returns the index of the first {@code c} in {@code [from, to)}, or -1. */
    int indexOf(char c, int from, int to) {
        if (c > 0xFF) {
            return -1;
        }
        byte b = (byte) c;
        for (int i = from; i < to; i++) {
            if (bytes[i] == b) {
                return i;
            }
        }
        return -1;
    }

    /** Returns a copy of the characters as a {@code String}. */
    @Override
    public String toString() {
        return new String(bytes, 0, length, StandardCharsets.ISO_8859_1);
    }
}
