"""The dialogue engine: projects, memory, tools, the model port and the streaming turn interface.

``seam`` is the interface the gateway drives (design §4); ``loop`` runs turns behind it
(``ProjectEngine``); ``tools`` is the tool runtime; ``memory`` the memory model and stores;
``llm`` the model port and the scripted model; ``project`` loads an agent project folder.
"""
