"""Raw data: the checksum table and fetcher (``registry``, ``fetch``) and the loaders (``omniglot``, ``idx``,
``trec``, ``wordpiece``, ``spoc``)."""
