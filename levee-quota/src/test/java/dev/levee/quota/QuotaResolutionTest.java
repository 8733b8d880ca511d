package dev.levee.quota;

import static org.assertj.core.api.Assertions.assertThat;

import dev.levee.core.S3Operation;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Resolution of (resource, key, operation) against SPEC.md §4, one row per case. Configs "A"
 * and "B" are in {@link QuotaFixtures}; {@code ''} is the empty key of bucket-level operations;
 * an empty cell is {@code null}.
 */
class QuotaResolutionTest {

    private static final QuotaConfig A = QuotaFixtures.configA();
    private static final QuotaConfig B = QuotaFixtures.configB();

    @ParameterizedTest(name = "[{index}] {0} {1} {2} {3} -> {4} {6}")
    @CsvSource(delimiter = '|', nullValues = "-", textBlock = """
        # cfg| resource        | key                | operation     | level          | quota    | limit key                                          | matched prefix | matched op
        # --- the seed example: longest prefix, wildcard, "" entry with methods
          A  | example-bucket  | photos/2024/a.jpg  | GetObject     | PREFIX         | 1700/300 | prefix:example-bucket/photos/2024                  | photos/2024    | -
          A  | example-bucket  | photos/2024/a.jpg  | PutObject     | PREFIX         | 1700/300 | prefix:example-bucket/photos/2024                  | photos/2024    | -
          A  | example-bucket  | photos/2024        | HeadObject    | PREFIX         | 1700/300 | prefix:example-bucket/photos/2024                  | photos/2024    | -
          A  | example-bucket  | photos/2023/a.jpg  | PutObject     | PREFIX_METHOD  | 100/25   | prefix:example-bucket/#PutObject                   | ''             | PutObject
          A  | example-bucket  | photos/2023/a.jpg  | GetObject     | PREFIX         | 1700/300 | prefix:example-bucket/                             | ''             | -
          A  | example-bucket  | uploads/a.bin      | PutObject     | PREFIX         | 1700/300 | prefix:example-bucket/uploads/*@uploads/a.bin      | uploads/*      | -
          A  | example-bucket  | uploads/b.bin      | PutObject     | PREFIX         | 1700/300 | prefix:example-bucket/uploads/*@uploads/b.bin      | uploads/*      | -
          A  | example-bucket  | uploads/           | GetObject     | PREFIX         | 1700/300 | prefix:example-bucket/uploads/*@uploads/           | uploads/*      | -
          A  | example-bucket  | uploads            | PutObject     | PREFIX_METHOD  | 100/25   | prefix:example-bucket/#PutObject                   | ''             | PutObject
        # --- "" matches bucket-level operations (key ""); its quota comes before methods_default
          A  | example-bucket  | ''                 | ListObjects   | PREFIX         | 1700/300 | prefix:example-bucket/                             | ''             | -
          A  | example-bucket  | ''                 | HeadBucket    | PREFIX         | 1700/300 | prefix:example-bucket/                             | ''             | -
          A  | example-bucket  | ''                 | PutObject     | PREFIX_METHOD  | 100/25   | prefix:example-bucket/#PutObject                   | ''             | PutObject
          A  | example-bucket  | x                  | Unknown       | PREFIX         | 1700/300 | prefix:example-bucket/                             | ''             | -
        # --- longest literal prefix wins; equal lengths ("abc*" vs "abc"): the one listed first
          A  | tiered          | a                  | GetObject     | PREFIX         | 10/1     | prefix:tiered/a                                    | a              | -
          A  | tiered          | ab                 | GetObject     | PREFIX         | 20/2     | prefix:tiered/ab                                   | ab             | -
          A  | tiered          | abd                | GetObject     | PREFIX         | 20/2     | prefix:tiered/ab                                   | ab             | -
          A  | tiered          | abc                | GetObject     | PREFIX         | 30/3     | prefix:tiered/abc*@abc                             | abc*           | -
          A  | tiered          | abcdef             | GetObject     | PREFIX         | 30/3     | prefix:tiered/abc*@abcdef                          | abc*           | -
          A  | tiered          | b1                 | GetObject     | PREFIX         | 50/5     | prefix:tiered/b*@b1                                | b*             | -
          A  | tiered          | c1                 | GetObject     | PREFIX         | 70/7     | prefix:tiered/c                                    | c              | -
          A  | tiered          | d                  | GetObject     | DEFAULT        | 1000/500 | default:tiered                                     | -              | -
          A  | tiered          | ''                 | ListObjects   | METHODS_DEFAULT| 250/250  | methods_default:tiered#ListObjects                 | -              | ListObjects
          A  | tiered          | ''                 | HeadBucket    | DEFAULT        | 1000/500 | default:tiered                                     | -              | -
        # --- methods without quota: the longest entry decides, then step 2 (shorter entries are not tried)
          A  | methods-only    | logs/x             | PutObject     | PREFIX_METHOD  | 5/1      | prefix:methods-only/logs/#PutObject                | logs/          | PutObject
          A  | methods-only    | logs/x             | GetObject     | RESOURCE       | 300/30   | resource:methods-only                              | -              | -
          A  | methods-only    | logs/x             | DeleteObject  | RESOURCE       | 300/30   | resource:methods-only                              | -              | -
          A  | methods-only    | other/x            | DeleteObject  | PREFIX_METHOD  | 1/1      | prefix:methods-only/#DeleteObject                  | ''             | DeleteObject
          A  | methods-only    | other/x            | GetObject     | RESOURCE       | 300/30   | resource:methods-only                              | -              | -
          A  | methods-only    | other/x            | Unknown       | RESOURCE       | 300/30   | resource:methods-only                              | -              | -
          A  | methods-only    | ''                 | ListObjects   | RESOURCE       | 300/30   | resource:methods-only                              | -              | -
        # --- ListObjects covers ListObjectsV2 at the same level unless V2 is configured there
          A  | lists           | ''                 | ListObjects   | PREFIX_METHOD  | 10/1     | prefix:lists/#ListObjects                          | ''             | ListObjects
          A  | lists           | ''                 | ListObjectsV2 | PREFIX_METHOD  | 10/1     | prefix:lists/#ListObjects                          | ''             | ListObjects
          A  | lists           | ''                 | ListObjectVersions | DEFAULT   | 1000/500 | default:lists                                      | -              | -
          A  | lists           | x                  | GetObject     | DEFAULT        | 1000/500 | default:lists                                      | -              | -
          A  | lists-v2        | ''                 | ListObjectsV2 | PREFIX_METHOD  | 20/2     | prefix:lists-v2/#ListObjectsV2                     | ''             | ListObjectsV2
          A  | lists-v2        | ''                 | ListObjects   | PREFIX_METHOD  | 10/1     | prefix:lists-v2/#ListObjects                       | ''             | ListObjects
          A  | other-bucket    | ''                 | ListObjectsV2 | METHODS_DEFAULT| 250/250  | methods_default:other-bucket#ListObjects           | -              | ListObjects
          B  | other-bucket    | ''                 | ListObjectsV2 | METHODS_DEFAULT| 260/26   | methods_default:other-bucket#ListObjectsV2         | -              | ListObjectsV2
          B  | other-bucket    | ''                 | ListObjects   | METHODS_DEFAULT| 250/250  | methods_default:other-bucket#ListObjects           | -              | ListObjects
        # --- wildcard entry with methods; keys containing '*', '#' and '@' stay in their own counters
          A  | wild-methods    | tmp/a              | PutObject     | PREFIX_METHOD  | 1/1      | prefix:wild-methods/tmp/*#PutObject@tmp/a          | tmp/*          | PutObject
          A  | wild-methods    | tmp/a              | GetObject     | PREFIX         | 5/5      | prefix:wild-methods/tmp/*@tmp/a                    | tmp/*          | -
          A  | wild-methods    | tmp/a#PutObject    | GetObject     | PREFIX         | 5/5      | prefix:wild-methods/tmp/*@tmp/a#PutObject          | tmp/*          | -
          A  | wild-methods    | tmp/*              | GetObject     | PREFIX         | 5/5      | prefix:wild-methods/tmp/*@tmp/*                    | tmp/*          | -
          A  | wild-methods    | tmp/@x             | DeleteObject  | PREFIX         | 5/5      | prefix:wild-methods/tmp/*@tmp/@x                   | tmp/*          | -
          A  | wild-methods    | tmp                | GetObject     | DEFAULT        | 1000/500 | default:wild-methods                               | -              | -
          A  | star-all        | ''                 | HeadBucket    | PREFIX         | 2/2      | prefix:star-all/*@                                 | *              | -
          A  | star-all        | k                  | GetObject     | PREFIX         | 2/2      | prefix:star-all/*@k                                | *              | -
        # --- methods_default and default are counted per resource
          A  | empty-config    | x                  | GetObject     | DEFAULT        | 1000/500 | default:empty-config                               | -              | -
          A  | empty-config    | ''                 | DeleteObjects | METHODS_DEFAULT| 50/5     | methods_default:empty-config#DeleteObjects         | -              | DeleteObjects
          A  | other-bucket    | x                  | GetObject     | DEFAULT        | 1000/500 | default:other-bucket                               | -              | -
          A  | third-bucket    | x                  | GetObject     | DEFAULT        | 1000/500 | default:third-bucket                               | -              | -
          A  | other-bucket    | ''                 | ListObjects   | METHODS_DEFAULT| 250/250  | methods_default:other-bucket#ListObjects           | -              | ListObjects
          A  | third-bucket    | ''                 | ListObjects   | METHODS_DEFAULT| 250/250  | methods_default:third-bucket#ListObjects           | -              | ListObjects
          A  | other-bucket    | ''                 | Unknown       | DEFAULT        | 1000/500 | default:other-bucket                               | -              | -
          A  | logs.example.com| a/b                | Unknown       | RESOURCE       | 7/7        | resource:logs.example.com                        | -              | -
          A  | ''              | ''                 | ListBuckets   | DEFAULT        | 1000/500 | default:                                           | -              | -
        # --- unicode keys and prefixes, matched exactly
          A  | unicode         | фото/кот.jpg       | GetObject     | PREFIX         | 11/1     | prefix:unicode/фото/                               | фото/          | -
          A  | unicode         | фот                | GetObject     | DEFAULT        | 1000/500 | default:unicode                                    | -              | -
          A  | unicode         | 😀/x               | PutObject     | PREFIX         | 12/2     | prefix:unicode/😀/*@😀/x                           | 😀/*           | -
          A  | unicode         | ФОТО/кот.jpg       | GetObject     | DEFAULT        | 1000/500 | default:unicode                                    | -              | -
        """)
    void resolves(String cfg, String resource, String key, S3Operation op, QuotaLevel level, String quota,
                  String limitKey, String matchedPrefix, S3Operation matchedOp) {
        QuotaConfig config = cfg.equals("A") ? A : B;
        String[] rateBurst = quota.split("/");
        Quota expected = new Quota(Double.parseDouble(rateBurst[0]), Integer.parseInt(rateBurst[1]));

        ResolvedQuota resolved = config.resolve(resource, key, op);

        assertThat(resolved).isEqualTo(new ResolvedQuota(expected, level, limitKey, matchedPrefix, matchedOp));
    }
}
