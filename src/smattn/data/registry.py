"""The raw files the workflow uses, with the checksums each must match and where to get them.

The project keeps its own table (not the mirror's SHA256SUMS). For every file except the two Omniglot image
zips the listed bytes are the official release (sha256 and md5 agree with the published identifiers, see
the mirror's PROVENANCE.md). The official Omniglot image zips are published with an md5 only; the shared
mirror holds pixel-identical rebuilds of them, accepted through their own sha256 and labelled as such (the
rebuilds are smaller than the official zips, so each checksum carries the size of the bytes it identifies).
Fashion-MNIST's S3 website endpoint serves plain http only: it is kept as the last fallback; the checksum
protects the bytes whatever the transport.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Digest:
    algorithm: str  # "sha256" or "md5"
    hexdigest: str
    label: str  # what bytes this checksum identifies
    size: int  # length in bytes of the file this checksum identifies (downloads stop reading past it)


@dataclass(frozen=True)
class RawFile:
    relpath: str  # path relative to the data folder / mirror
    digests: tuple[Digest, ...]  # the file is valid if it matches any one of them
    urls: tuple[str, ...]  # official upstream locations, tried in order: https first, plain http only as a fallback

    @property
    def max_size(self) -> int:
        """The largest size any accepted version of the file has (bytes)."""
        return max(d.size for d in self.digests)


RAW_FILES: tuple[RawFile, ...] = (
    RawFile(
        "bert-base-uncased/vocab.txt",
        (
            Digest(
                "sha256", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3", "official bytes", 231508
            ),
            Digest("md5", "64800d5d8528ce344256daf115d4965e", "official bytes", 231508),
        ),
        ("https://huggingface.co/bert-base-uncased/resolve/main/vocab.txt",),
    ),
    RawFile(
        "fashion-mnist/t10k-images-idx3-ubyte.gz",
        (
            Digest(
                "sha256", "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073", "official bytes", 4422102
            ),
            Digest("md5", "bef4ecab320f06d8554ea6380940ec79", "official bytes", 4422102),
        ),
        (
            "https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion/t10k-images-idx3-ubyte.gz",
            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/t10k-images-idx3-ubyte.gz",
        ),
    ),
    RawFile(
        "fashion-mnist/t10k-labels-idx1-ubyte.gz",
        (
            Digest(
                "sha256", "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5", "official bytes", 5148
            ),
            Digest("md5", "bb300cfdad3c16e7a12a480ee83cd310", "official bytes", 5148),
        ),
        (
            "https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion/t10k-labels-idx1-ubyte.gz",
            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/t10k-labels-idx1-ubyte.gz",
        ),
    ),
    RawFile(
        "fashion-mnist/train-images-idx3-ubyte.gz",
        (
            Digest(
                "sha256", "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84", "official bytes", 26421880
            ),
            Digest("md5", "8d4fb7e6c68d591d4c3dfef9ec88bf0d", "official bytes", 26421880),
        ),
        (
            "https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion/train-images-idx3-ubyte.gz",
            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/train-images-idx3-ubyte.gz",
        ),
    ),
    RawFile(
        "fashion-mnist/train-labels-idx1-ubyte.gz",
        (
            Digest(
                "sha256", "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845", "official bytes", 29515
            ),
            Digest("md5", "25c81989df183df01b3e8a0aad5dffbe", "official bytes", 29515),
        ),
        (
            "https://github.com/zalandoresearch/fashion-mnist/raw/master/data/fashion/train-labels-idx1-ubyte.gz",
            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/train-labels-idx1-ubyte.gz",
        ),
    ),
    RawFile(
        "mnist/t10k-images-idx3-ubyte.gz",
        (
            Digest(
                "sha256", "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", "official bytes", 1648877
            ),
            Digest("md5", "9fb629c4189551a2d022fa330f9573f3", "official bytes", 1648877),
        ),
        (
            "https://ossci-datasets.s3.amazonaws.com/mnist/t10k-images-idx3-ubyte.gz",
            "http://yann.lecun.com/exdb/mnist/t10k-images-idx3-ubyte.gz",
        ),
    ),
    RawFile(
        "mnist/t10k-labels-idx1-ubyte.gz",
        (
            Digest(
                "sha256", "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", "official bytes", 4542
            ),
            Digest("md5", "ec29112dd5afa0611ce80d1b7f02629c", "official bytes", 4542),
        ),
        (
            "https://ossci-datasets.s3.amazonaws.com/mnist/t10k-labels-idx1-ubyte.gz",
            "http://yann.lecun.com/exdb/mnist/t10k-labels-idx1-ubyte.gz",
        ),
    ),
    RawFile(
        "mnist/train-images-idx3-ubyte.gz",
        (
            Digest(
                "sha256", "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", "official bytes", 9912422
            ),
            Digest("md5", "f68b3c2dcbeaaa9fbdd348bbdeb94873", "official bytes", 9912422),
        ),
        (
            "https://ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz",
            "http://yann.lecun.com/exdb/mnist/train-images-idx3-ubyte.gz",
        ),
    ),
    RawFile(
        "mnist/train-labels-idx1-ubyte.gz",
        (
            Digest(
                "sha256", "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", "official bytes", 28881
            ),
            Digest("md5", "d53e105ee54ea40749a09fcbcd1e9432", "official bytes", 28881),
        ),
        (
            "https://ossci-datasets.s3.amazonaws.com/mnist/train-labels-idx1-ubyte.gz",
            "http://yann.lecun.com/exdb/mnist/train-labels-idx1-ubyte.gz",
        ),
    ),
    RawFile(
        "omniglot/all_runs.zip",
        (
            Digest(
                "sha256", "437c1eeab0af8484112e1b4cc0f3d541ec727f7c47b9b202da738af9dfd6c325", "official bytes", 352787
            ),
            Digest("md5", "e8996daecdf12afeeb4a53a179f06b19", "official bytes", 352787),
        ),
        ("https://github.com/brendenlake/omniglot/raw/master/python/one-shot-classification/all_runs.zip",),
    ),
    RawFile(
        "omniglot/images_background.zip",
        (
            Digest(
                "sha256",
                "1313423eb2fe2efdf726fb93dd66e3909327c0e7a3192a75617b99333eb6cc60",
                "pixel-identical rebuild (project mirror), not the official bytes",
                9006415,
            ),
            Digest("md5", "68d2efa1b9178cc56df9314c21c6e718", "official release", 9464212),
        ),
        ("https://github.com/brendenlake/omniglot/raw/master/python/images_background.zip",),
    ),
    RawFile(
        "omniglot/images_evaluation.zip",
        (
            Digest(
                "sha256",
                "bef423cc2069fd3d0d63e566b331d5311b579c12fa4008d78d6ca1b145092662",
                "pixel-identical rebuild (project mirror), not the official bytes",
                6163654,
            ),
            Digest("md5", "6b91aef0f799c5bb55b94e3f2daec811", "official release", 6462886),
        ),
        ("https://github.com/brendenlake/omniglot/raw/master/python/images_evaluation.zip",),
    ),
    RawFile(
        "trec/TREC_10.label",
        (
            Digest(
                "sha256", "033f22c028c2bbba9ca682f68ffe204dc1aa6e1cf35dd6207f2d4ca67f0d0e8e", "official bytes", 23354
            ),
            Digest("md5", "323a3554401d86e650717e2d2f942589", "official bytes", 23354),
        ),
        ("https://cogcomp.seas.upenn.edu/Data/QA/QC/TREC_10.label",),
    ),
    RawFile(
        "trec/train_5500.label",
        (
            Digest(
                "sha256", "9e4c8bdcaffb96ed61041bd64b564183d52793a8e91d84fc3a8646885f466ec3", "official bytes", 335858
            ),
            Digest("md5", "073462e3fcefaae31e00edb1f18d2d02", "official bytes", 335858),
        ),
        ("https://cogcomp.seas.upenn.edu/Data/QA/QC/train_5500.label",),
    ),
    RawFile(
        "reference/spoc/AMP_2w.csv",
        (
            Digest(
                "sha256", "0fe96e43f885d3050ca71ecf50f4fa5babc387016639c532636aa5b4861690b2", "official bytes", 1317
            ),
            Digest("md5", "796cc491d6ee54550df0d885b26b6efe", "official bytes", 1317),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/AMP_2w.csv",
        ),
    ),
    RawFile(
        "reference/spoc/BO_2w.csv",
        (
            Digest(
                "sha256", "2b1d6e18724a362e6b91e51dfc8ace5e04140cafc76fa1cb975c8cc67d7fcb8e", "official bytes", 2543
            ),
            Digest("md5", "4c12af74ad5ce58b01abb0b70f9fa3de", "official bytes", 2543),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/BO_2w.csv",
        ),
    ),
    RawFile(
        "reference/spoc/BO_2w_smooth.csv",
        (
            Digest(
                "sha256", "27ce52f1cbb844580a7873fae9336467b642d5278a07d27f2ab3ddb68ca1fe9c", "official bytes", 9518
            ),
            Digest("md5", "37ac854685afa5dfe788af145d6e773b", "official bytes", 9518),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/BO_2w_smooth.csv",
        ),
    ),
    RawFile(
        "reference/spoc/BO_3w.csv",
        (
            Digest(
                "sha256", "71e8dac09630b5a3842ebd26565dad74b172fb0846ff25a146cdec6a7ceb298b", "official bytes", 3226
            ),
            Digest("md5", "8fe177deef0d4693ad3e68ca7b3e3928", "official bytes", 3226),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/BO_3w.csv",
        ),
    ),
    RawFile(
        "reference/spoc/alpha_critical.csv",
        (
            Digest("sha256", "8dc3aa6e23113e099a3b8224b90ad6f23cf48f0b2e11d1fa770c530b1379aa9e", "official bytes", 721),
            Digest("md5", "b9f6d86f78cf2cde668349b08115a191", "official bytes", 721),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/alpha_critical.csv",
        ),
    ),
    RawFile(
        "reference/spoc/gen_error_AMP_2w.csv",
        (
            Digest("sha256", "c40dd066136b07e72042bad9335dc377410bd21d94c609bc49ee3f8ea7b11999", "official bytes", 716),
            Digest("md5", "0c5528c5aa129fac9a0d1b3fd64e06e9", "official bytes", 716),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/gen_error_AMP_2w.csv",
        ),
    ),
    RawFile(
        "reference/spoc/gen_error_BO_2w.csv",
        (
            Digest(
                "sha256", "612670ebeed7fbdf08fad618738f14e844a8783e6b85e6ed3816304710c96122", "official bytes", 1592
            ),
            Digest("md5", "7d06fd62aa6c73496583c9fb77a8697f", "official bytes", 1592),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/gen_error_BO_2w.csv",
        ),
    ),
    RawFile(
        "reference/spoc/gen_error_BO_2w_one_layer.csv",
        (
            Digest(
                "sha256", "ec90d1d477270ab45b11e33e590814ebffcc180d0ac9d7b9c8bc377b9f13b541", "official bytes", 1579
            ),
            Digest("md5", "4cc2d96541a2a417dea4d5413e1ca662", "official bytes", 1579),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/gen_error_BO_2w_one_layer.csv",
        ),
    ),
    RawFile(
        "reference/spoc/gen_error_BO_2w_one_layer_smooth.csv",
        (
            Digest(
                "sha256", "de0721d5f9ccec13bb1dd154dd2762e37ae341bab48da50f93867efd37023c92", "official bytes", 7013
            ),
            Digest("md5", "51c07a8722d44b600307c9e83db9c4dc", "official bytes", 7013),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/gen_error_BO_2w_one_layer_smooth.csv",
        ),
    ),
    RawFile(
        "reference/spoc/gen_error_BO_2w_smooth.csv",
        (
            Digest(
                "sha256", "ab185df8e8f12b66c59572759bc935bdc5fb39071d3e9ee624a0e0942fa29881", "official bytes", 7086
            ),
            Digest("md5", "cfd27f7e9812a3cbda29a4a4f15e0712", "official bytes", 7086),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/gen_error_BO_2w_smooth.csv",
        ),
    ),
    RawFile(
        "reference/spoc/gen_error_BO_3w.csv",
        (
            Digest(
                "sha256", "1593795e4d824dd94760fe09b0c79f82e7875285a67e0387b7ba748e8d788507", "official bytes", 1267
            ),
            Digest("md5", "4a63fd938be49cbfbe29a3c015fb6959", "official bytes", 1267),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/gen_error_BO_3w.csv",
        ),
    ),
    RawFile(
        "reference/spoc/gen_error_BO_3w_last_layer.csv",
        (
            Digest(
                "sha256", "be3b146193590671aecdc28725f09ba6d0b1abb2b18dcfa76f3a4690dc792ed0", "official bytes", 1280
            ),
            Digest("md5", "7e2a8ad3e3e23e2bbb2636ec212af390", "official bytes", 1280),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/gen_error_BO_3w_last_layer.csv",
        ),
    ),
    RawFile(
        "reference/spoc/AMP_BO_2w_d1000_alpha1.2_samples1_seed1.npy",
        (
            Digest(
                "sha256", "8ee464f032559a14cd688aed9eb1fee79c6b3a5c041e456e4adc2aa658002119", "official bytes", 1216
            ),
            Digest("md5", "69449b11652842d05a9ac323f1fba4b1", "official bytes", 1216),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/AMP_BO_2w_d1000_alpha1.2_samples1_seed1.npy",
        ),
    ),
    RawFile(
        "reference/spoc/2w_e_gen_d1000_alpha1.2_samples1_seed1.npy",
        (
            Digest("sha256", "e0432c1ec7a41473b8d0bb6e90ede43cc3a36d2429017615799ae995835f392d", "official bytes", 400),
            Digest("md5", "913aad8340eb1f9a8ffa03ba8076d7c2", "official bytes", 400),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/2w_e_gen_d1000_alpha1.2_samples1_seed1.npy",
        ),
    ),
    RawFile(
        "reference/spoc/C1_random.npy",
        (
            Digest(
                "sha256", "4ccfaffa73ea22f00fe86275a692e5d5389d7e2c4e5ea4fe72d840bc2ac3955b", "official bytes", 4134528
            ),
            Digest("md5", "1c2e5deb670aba4d96cf11eecb579725", "official bytes", 4134528),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/C1_random.npy",
        ),
    ),
    RawFile(
        "reference/spoc/C2_random.npy",
        (
            Digest(
                "sha256", "4a566d50652f88d1509034200538f3d417ff463eef2bc31ed40ae810eaa1489c", "official bytes", 4134528
            ),
            Digest("md5", "bdfa02f3600b5fec28ac3898f71421ce", "official bytes", 4134528),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/C2_random.npy",
        ),
    ),
    RawFile(
        "reference/spoc/dist_1.npy",
        (
            Digest(
                "sha256", "f87c8717138db7af85116609eea6ccbb8a1b9bc1b2d6024922c15506f4423adf", "official bytes", 699008
            ),
            Digest("md5", "374aeb8d3eaaa82ef0c438843b4ac6e7", "official bytes", 699008),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/dist_1.npy",
        ),
    ),
    RawFile(
        "reference/spoc/dist_2.npy",
        (
            Digest(
                "sha256", "58999bccc1cbdbc5e94501ee574d77b09e953e5676c36740d7e6fb8f517f6ae2", "official bytes", 699008
            ),
            Digest("md5", "ad08c12155207c40dad818c270506e03", "official bytes", 699008),
        ),
        (
            "https://raw.githubusercontent.com/SPOC-group/SequenceIndexModels/a454a08ae45bd7775c6e6ebdf51c7b38de8a2d60/data/dist_2.npy",
        ),
    ),
)

BY_PATH: dict[str, RawFile] = {f.relpath: f for f in RAW_FILES}


def lookup(relpath: str) -> RawFile:
    """The table entry of ``relpath``; KeyError naming the known files otherwise."""
    try:
        return BY_PATH[relpath]
    except KeyError:
        raise KeyError(f"{relpath!r} is not a raw file of this workflow; known: {', '.join(sorted(BY_PATH))}") from None
